"""Where the boxes of a scene go: the forward graph in rows from its inputs down, ordered
to cross few edges (Sugiyama-style: barycentre sweeps, then coordinates by isotonic
regression), and B beside it, each adjoint in the row of its forward node."""

from __future__ import annotations

from .model import GAP, HGAP, ROW, Edge, Scene


def place_boxes(scene: Scene) -> None:
    boxes = scene.boxes
    fwd = [k for k, b in boxes.items() if b.side == "forward"]
    back = [k for k, b in boxes.items() if b.side == "B"]
    rows = _forward_rows(boxes, fwd, scene.edges)
    levels, depth = _levels(scene, back, rows)
    for k in fwd:
        boxes[k].level = levels[rows[k]]
    ordering, dummies = _order(boxes, fwd, rows, scene.edges)
    xs = _coordinates(ordering, boxes)
    for k in fwd:
        boxes[k].x = xs[k]
    right = max((xs[k] + boxes[k].width / 2 for k in fwd), default=0.0)
    _place_b(scene, back, depth, right)
    for b in boxes.values():
        b.y = -b.level * ROW
    for e in scene.edges:  # forward edges bend through their dummy points
        if e.kind == "operand":
            e.points = [(xs[d], -levels[int(d.rsplit("@", 1)[1])] * ROW)
                        for d in dummies.get((e.src, e.dst), [])]


def _forward_rows(boxes, fwd: list[str], edges: list[Edge]) -> dict[str, int]:
    preds: dict[str, list[str]] = {k: [] for k in fwd}
    users: dict[str, list[str]] = {k: [] for k in fwd}
    for e in edges:
        if e.kind == "operand":
            preds[e.dst].append(e.src)
            users[e.src].append(e.dst)
    row: dict[str, int] = {}
    for k in fwd:  # keys in id order: topological
        if boxes[k].kind == "input":
            row[k] = 0
        else:
            row[k] = 1 + max((row[p] for p in preds[k]), default=-1)
    for k in reversed(fwd):  # then as late as possible: each node just above its first user
        if users[k] and not boxes[k].output:
            row[k] = max(row[k], min(row[u] for u in users[k]) - 1)
    return row


def _levels(scene: Scene, back: list[str], rows: dict[str, int]) -> tuple[dict, dict]:
    """Levels (rows of the picture, top down) of the forward rows, and the depth of each B
    intermediate: forward row ``r`` is at ``levels[r]``; an intermediate of depth ``d``
    built by the rule of a node at row ``r`` goes ``d`` levels above it, into extra levels
    kept free for it (adjoints flow up, so B reads bottom to top)."""
    boxes = scene.boxes
    preds: dict[str, list[str]] = {k: [] for k in back}
    for e in scene.edges:
        if e.kind == "b-operand" and e.dst in preds:
            preds[e.dst].append(e.src)
    depth: dict[str, int] = {}
    extra: dict[int, int] = {}
    for k in back:  # keys in id order: operands first
        b = boxes[k]
        if b.anchor is not None:
            continue
        same = [p for p in preds[k] if p in depth and boxes[p].origin == b.origin]
        depth[k] = 1 + max((depth[p] for p in same), default=0)
        r = rows.get(b.origin or "")
        if r is not None:
            extra[r] = max(extra.get(r, 0), depth[k])
    levels: dict[int, int] = {}
    level = 0
    for r in range(max(rows.values(), default=0) + 1):
        level += extra.get(r, 0)
        levels[r] = level
        level += 1
    return levels, depth


def _place_b(scene: Scene, back: list[str], depth: dict[str, int], right: float) -> None:
    """Adjoints and shared markers mirror their forward node across the gap, in its row;
    intermediates go above the row of the node whose rule built them, under their users."""
    boxes = scene.boxes
    mirror = 2 * right + GAP
    nbrs: dict[str, list[str]] = {k: [] for k in back}
    for e in scene.edges:
        if e.kind == "b-operand" and e.dst in nbrs and e.src in nbrs:
            nbrs[e.dst].append(e.src)
            nbrs[e.src].append(e.dst)
    placed: dict[str, list] = {}  # key -> [level, x]
    for k in back:
        a = boxes.get(boxes[k].anchor or "")
        if a is not None and a.side == "forward":
            placed[k] = [a.level, mirror - a.x]
    rest = [k for k in back if k not in placed]
    for k in rest:
        b = boxes[k]
        o = boxes.get(b.origin or "")
        if o is not None and (o.side == "forward" or o.key in placed):
            base = o.level if o.side == "forward" else placed[o.key][0]
        else:
            base = 1 + min((placed[p][0] for p in nbrs[k] if p in placed), default=0)
        x = mirror - o.x if o is not None and o.side == "forward" else right + GAP
        placed[k] = [max(base - depth.get(k, 1), 0), x]
    for _ in range(3):  # intermediates: between their neighbours in B
        for k in rest:
            xs = [placed[p][1] for p in nbrs[k]]
            if xs:
                placed[k][1] = sum(xs) / len(xs)
    by_level: dict[int, list[str]] = {}
    for k, (level, _) in placed.items():
        by_level.setdefault(level, []).append(k)
    for level, keys in by_level.items():
        keys.sort(key=lambda k: placed[k][1])
        widths = [boxes[k].width for k in keys]
        xs = _pav([placed[k][1] for k in keys], widths)
        shift = max(0.0, right + GAP / 2 - (xs[0] - widths[0] / 2))
        for k, x in zip(keys, xs):
            boxes[k].x, boxes[k].level = x + shift, level


def _order(boxes, fwd: list[str], rows: dict[str, int], edges: list[Edge]):
    """The boxes of each forward row in left-to-right order (with dummy points for edges
    that span rows), after barycentre sweeps."""
    layer: dict[int, list[str]] = {}
    up: dict[str, list[str]] = {}
    down: dict[str, list[str]] = {}
    dummies: dict[tuple[str, str], list[str]] = {}
    for k in fwd:
        layer.setdefault(rows[k], []).append(k)
        up.setdefault(k, [])
        down.setdefault(k, [])
    for e in edges:
        if e.kind != "operand":
            continue
        chain = [e.src]
        for r in range(rows[e.src] + 1, rows[e.dst]):
            d = f"{e.src}>{e.dst}@{r}"
            layer.setdefault(r, []).append(d)
            up[d], down[d] = [], []
            chain.append(d)
            dummies.setdefault((e.src, e.dst), []).append(d)
        chain.append(e.dst)
        for a, b in zip(chain, chain[1:]):
            down[a].append(b)
            up[b].append(a)
    order = [layer.get(r, []) for r in range(max(layer, default=-1) + 1)]
    best, best_cross = [list(r) for r in order], _count(order, down)
    for sweep in range(8):
        rng = range(1, len(order)) if sweep % 2 == 0 else range(len(order) - 2, -1, -1)
        nbrs = up if sweep % 2 == 0 else down
        for r in rng:
            pos = {k: j for j, k in enumerate(order[r - 1 if sweep % 2 == 0 else r + 1])}
            keyed = []
            for j, k in enumerate(order[r]):
                ps = [pos[n] for n in nbrs[k] if n in pos]
                keyed.append((sum(ps) / len(ps) if ps else j, j, k))
            order[r] = [k for _, _, k in sorted(keyed)]
        cross = _count(order, down)
        if cross < best_cross:
            best, best_cross = [list(r) for r in order], cross
    return (best, up, down), dummies


def _count(order: list[list[str]], down: dict[str, list[str]]) -> int:
    """Crossings between consecutive rows (the usual inversion count)."""
    total = 0
    for r in range(len(order) - 1):
        pos = {k: j for j, k in enumerate(order[r + 1])}
        ends = [(j, pos[b]) for j, a in enumerate(order[r]) for b in down[a] if b in pos]
        ends.sort()
        for x in range(len(ends)):
            for y in range(x + 1, len(ends)):
                if ends[x][0] != ends[y][0] and ends[y][1] < ends[x][1]:
                    total += 1
        if total > 10_000:
            break
    return total


def _coordinates(ordering, boxes) -> dict[str, float]:
    order, up, down = ordering
    width = {k: (boxes[k].width if k in boxes else 0.1) for row in order for k in row}
    x: dict[str, float] = {}
    for row in order:
        pos = 0.0
        for k in row:
            x[k] = pos + width[k] / 2
            pos += width[k] + HGAP
    for sweep in range(6):
        rows = order if sweep % 2 == 0 else order[::-1]
        nbrs = up if sweep % 2 == 0 else down
        for row in rows:
            want = []
            for k in row:
                ps = [x[n] for n in nbrs[k]] or [x[n] for n in (down if sweep % 2 == 0
                                                                 else up)[k]]
                # the lower median, not the mean: a node lines up with one operand, so
                # long chains (h = h + t) stand straight instead of drifting sideways
                want.append(sorted(ps)[(len(ps) - 1) // 2] if ps else x[k])
            for k, v in zip(row, _pav(want, [width[k] for k in row])):
                x[k] = v
    left = min((x[k] - width[k] / 2 for k in x), default=0.0)
    return {k: v - left for k, v in x.items()}


def _pav(want: list[float], widths: list[float]) -> list[float]:
    """Places closest (least squares) to ``want`` keeping the order and no overlap:
    isotonic regression by pool-adjacent-violators on the shifted targets."""
    if not want:
        return []
    offsets = [0.0]
    for j in range(1, len(want)):
        offsets.append(offsets[-1] + (widths[j - 1] + widths[j]) / 2 + HGAP)
    blocks: list[list[float]] = []  # [sum, count]
    for w, o in zip(want, offsets):
        blocks.append([w - o, 1])
        while len(blocks) > 1 and blocks[-2][0] / blocks[-2][1] > blocks[-1][0] / blocks[-1][1]:
            s, c = blocks.pop()
            blocks[-1][0] += s
            blocks[-1][1] += c
    fitted = []
    for s, c in blocks:
        fitted += [s / c] * c
    return [f + o for f, o in zip(fitted, offsets)]
