"""Tools for people who check and extend symgrad: gradient checks against finite differences
and hypothesis strategies (:mod:`.testing`), and user-defined ops (:mod:`.extend`). Users
reach them as :mod:`symgrad.testing` and :mod:`symgrad.extend`."""
