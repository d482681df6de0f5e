"""`python webapp/manage.py paper_report --out DIR`: the paper's three findings beside ours
with bootstrap intervals, and its Figures 3, 4, 5, 7 and 8 as PNG and SVG (`make reproduce`
runs it). A disagreement with the paper is a result: the command exits 0 either way."""

from __future__ import annotations

import json
import uuid as uuid_lib
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError, CommandParser

from webapp.dashboard.figure_files import FigureFilesError, save_figures
from webapp.dashboard.paper_figures import paper_figures
from webapp.results.models import Campaign
from webapp.results.selectors.measurements import missing_nodes
from webapp.results.selectors.pairs import busiest_pair


def _campaigns(text: str | None) -> tuple[str, ...]:
    """--campaigns UUID,...: each a uuid of a stored campaign (else a CommandError naming it)."""
    if not text:
        return ()
    names = [part.strip() for part in text.split(",") if part.strip()]
    wrong = []
    for name in names:
        try:
            uuid_lib.UUID(name)
        except ValueError:
            wrong.append(name)
    if wrong:
        raise CommandError(f"--campaigns takes campaign uuids; not a uuid: {', '.join(wrong)}")
    chosen = tuple(str(uuid_lib.UUID(name)) for name in names)
    known = {
        str(u) for u in Campaign.objects.filter(uuid__in=chosen).values_list("uuid", flat=True)
    }
    unknown = [name for name in chosen if name not in known]
    if unknown:
        raise CommandError(
            f"no campaign {', '.join(unknown)} is stored (GET /api/v1/campaigns/ lists them)"
        )
    return chosen


def _pair(text: str | None) -> tuple[str, str] | None:
    """--pair SRC,DST: two known node names (else a CommandError saying what is wrong)."""
    if text is None:
        return None
    parts = [part.strip() for part in text.split(",")]
    if len(parts) != 2 or not all(parts) or parts[0] == parts[1]:
        raise CommandError(f"--pair takes two different node names, SRC,DST: {text!r}")
    missing = missing_nodes(*parts)
    if missing:
        raise CommandError(f"no node named {', '.join(missing)} has been reported")
    return parts[0], parts[1]


class Command(BaseCommand):
    help = (
        "Print the paper's three findings (HTTPS-TPC vs GridFTP; one stream vs eight; latency "
        "sensitivity) beside ours, with 95 percent bootstrap confidence intervals and a verdict "
        "(agrees, disagrees, too few data), over the stored measurements with a throughput; "
        "save the paper's Figures 3, 4, 5, 7 and 8 as PNG and SVG into --out, drawn as the "
        "dashboard draws them. Exits 0 whatever the verdicts. Needs the `reproduce` extra "
        "(numpy, scipy, kaleido) and Chromium for the figures."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--out",
            required=True,
            metavar="DIR",
            type=Path,
            help="directory for the figure files (made when missing)",
        )
        parser.add_argument(
            "--json",
            dest="json_path",
            metavar="FILE",
            type=Path,
            help="also write the findings and the figure files' names here, as JSON",
        )
        parser.add_argument(
            "--campaigns",
            metavar="UUID,...",
            help="only these campaigns' measurements (default: every measurement stored)",
        )
        parser.add_argument(
            "--pair",
            metavar="SRC,DST",
            help="Figure 5's pair (default: the pair with the most measurements; ties: the "
            "largest RTT)",
        )

    def handle(self, *args, out: Path, json_path: Path | None, campaigns, pair, **options) -> None:
        from webapp.dashboard.paper_text import finding_lines, header
        from webapp.results.selectors.paper_findings import paper_findings

        chosen = _campaigns(campaigns)
        figure_pair = _pair(pair) or busiest_pair(chosen)
        found = paper_findings(chosen)
        self.stdout.write(header(found))
        self.stdout.write("")
        lines = finding_lines(found.findings)
        for line in lines:
            self.stdout.write(line)
        written, skipped = self._figures(out, figure_pair, chosen)
        if json_path is not None:
            self._write_json(json_path, found, lines, written, skipped)

    def _figures(self, out: Path, pair, campaigns) -> tuple[list[Path], list[dict]]:
        figures = paper_figures(pair, campaigns)
        drawn = [(f.stem, f.title, f.figure) for f in figures if f.figure is not None]
        skipped = [{"figure": f.stem, "reason": f.reason} for f in figures if f.figure is None]
        try:
            written = save_figures(drawn, out)
        except FigureFilesError as exc:
            raise CommandError(str(exc)) from exc
        self.stdout.write("")
        self.stdout.write(f"Figures in {out}/:" if drawn else f"No figures in {out}/.")
        for stem, title, _ in drawn:
            self.stdout.write(f"  {stem}.png, {stem}.svg  {title}")
        for entry in skipped:
            self.stdout.write(f"  skipped {entry['figure']}: {entry['reason']}")
        return written, skipped

    def _write_json(self, path: Path, found, lines, written, skipped) -> None:
        document = {
            "measurements": found.measurements,
            "with_failures": found.with_failures,
            "campaigns": found.campaigns,
            "findings": [f.to_json() for f in found.findings],
            "lines": lines,
            "figures": [str(p) for p in written],
            "skipped_figures": skipped,
        }
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(document, indent=2) + "\n")
        self.stdout.write(f"Findings as JSON: {path}")
