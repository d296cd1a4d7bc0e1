"""(being written)"""


def getitem(x, key):
    raise NotImplementedError
