"""Which rows and columns a grid table shows, in which order, grouped how (issue 24: the
grid at 200 nodes).

- Grouped by site: when any node has a site (Node.site), rows and columns are ordered by
  site, then name, and each site's run of rows and of columns is a group (a header row
  above its rows, a header cell above its columns, a line before its first column). Nodes
  without a site come last, as "no site". No node with a site: one plain group, by name.
- Filtered by node (?node=ucsd-1, or several terms separated by commas or spaces): a node
  matches when a term is part of its name or is its site (case-insensitive). The table then
  shows the matching nodes' rows and columns, as MaDDash shows a host's row and column:
  the matching nodes come first (top rows, left columns), each matching row spans every
  column, and the other nodes' rows hold only the matching nodes' columns (what is sent to
  them). Cells between two nodes that do not match are left out.
- Compact: above COMPACT_ABOVE rows or columns, the table is drawn compact
  (webapp.dashboard.compact_table).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

COMPACT_ABOVE = 30  # more rows or columns than this: the compact table
NO_SITE = "no site"
MAX_FILTER_TERMS = 50
_TERMS = re.compile(r"[\s,]+")


@dataclass(frozen=True)
class Group:
    """A run of rows or columns of one site."""

    label: str
    size: int
    matched: bool = False  # a run of nodes the filter matched


@dataclass(frozen=True)
class Layout:
    """rows/cols: indices into the grid's names, top to bottom and left to right; widths:
    per row, how many of `cols` it shows (all of them unless filtered); groups: the site
    runs of rows and of columns (empty: not grouped)."""

    rows: list[int]
    cols: list[int]
    widths: list[int]
    row_groups: list[Group] = field(default_factory=list)
    col_groups: list[Group] = field(default_factory=list)
    terms: list[str] = field(default_factory=list)  # the filter's terms (none: no filter)
    matched: int = 0  # nodes the filter matched

    @property
    def compact(self) -> bool:
        return len(self.rows) > COMPACT_ABOVE or len(self.cols) > COMPACT_ABOVE

    @property
    def cells(self) -> int:
        """Cells shown (the diagonal's included)."""
        return sum(self.widths)


def filter_terms(raw: str | None) -> list[str]:
    """'ucsd-1, unl' -> ['ucsd-1', 'unl'] (lower case, each once, at most MAX_FILTER_TERMS)."""
    terms = [t.lower() for t in _TERMS.split(raw or "") if t]
    return list(dict.fromkeys(terms))[:MAX_FILTER_TERMS]


def matches(name: str, site: str, terms: list[str]) -> bool:
    lowered, site = name.lower(), site.lower()
    return any(term in lowered or term == site for term in terms)


def _groups(order: list[int], keys: list[tuple[bool, str]], grouped: bool) -> list[Group]:
    """Runs of equal (matched, site) along `order` (not `grouped` by site: the matching
    nodes and the others)."""
    groups: list[Group] = []
    for index in order:
        matched, site = keys[index]
        label = (site or NO_SITE) if grouped else ("matching" if matched else "other nodes")
        if groups and groups[-1].label == label and groups[-1].matched == matched:
            last = groups[-1]
            groups[-1] = Group(label, last.size + 1, matched)
        else:
            groups.append(Group(label, 1, matched))
    return groups


def grid_layout(names: list[str], sites: dict[str, str], terms: list[str]) -> Layout:
    """The layout of a grid of `names` (its rows and columns, in the grid's order), their
    sites (name -> site, '' or missing: none) and the filter's terms (none: no filter)."""
    site_of = [sites.get(name, "") for name in names]
    grouped = any(site_of)
    hit = [matches(n, s, terms) for n, s in zip(names, site_of, strict=True)] if terms else []
    keys = [(bool(hit and hit[i]), site_of[i] if grouped else "") for i in range(len(names))]

    def sort_key(i: int) -> tuple:
        # matching nodes first; by site (no site last), then the grid's own order
        return (not keys[i][0], keys[i][1] == "", keys[i][1], i)

    order = sorted(range(len(names)), key=sort_key)
    if not terms:
        return Layout(
            rows=order,
            cols=order,
            widths=[len(order)] * len(order),
            row_groups=_groups(order, keys, grouped) if grouped else [],
            col_groups=_groups(order, keys, grouped) if grouped else [],
        )
    matched = sum(hit)
    if not matched:
        return Layout(rows=[], cols=[], widths=[], terms=terms)
    groups = _groups(order, keys, grouped)
    return Layout(
        rows=order,
        cols=order,
        widths=[len(order) if hit[i] else matched for i in order],
        row_groups=groups,
        col_groups=groups,
        terms=terms,
        matched=matched,
    )
