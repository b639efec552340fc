"""MkDocs hooks: the pages that are generated from the code and the results, so they cannot drift.

A page holds a marker comment; the build replaces it:

* ``<!-- rlvr:cli -->``: every ``rlvr`` command, its arguments and options, from the typer app
  (through click, which typer builds on);
* ``<!-- rlvr:config -->``: every config key, its type, default and description, from the pydantic
  :class:`rlvr.config.TrainConfig` (field docstrings are its descriptions);
* ``<!-- rlvr:results -->``: every benchmark's figures and bars from ``benchmarks/results/*.json``,
  with the commit and date each was measured at.

The benchmarks' plots (``benchmarks/results/*.png``) are copied into the site as ``assets/results/``.
"""

from __future__ import annotations

import json
import types
import typing
from pathlib import Path
from typing import Any

import typer
from mkdocs.structure.files import File, Files
from pydantic import BaseModel

from rlvr.cli.app import app
from rlvr.config import TrainConfig

ROOT = Path(__file__).resolve().parents[2]
RESULTS = ROOT / "benchmarks" / "results"


def on_files(files: Files, config: Any) -> Files:
    for png in sorted(RESULTS.glob("*.png")):
        files.append(File.generated(config, f"assets/results/{png.name}", abs_src_path=str(png)))
    return files


def on_page_markdown(markdown: str, page: Any, config: Any, files: Files) -> str:
    for marker, make in (
        ("<!-- rlvr:cli -->", cli_reference),
        ("<!-- rlvr:config -->", config_reference),
        ("<!-- rlvr:results -->", results_pages),
    ):
        if marker in markdown:
            markdown = markdown.replace(marker, make())
    return markdown


# --------------------------------------------------------------------------- the CLI


def cli_reference() -> str:

    root = typer.main.get_command(app)  # typer's own (vendored) click objects: used by duck typing
    ctx = root.make_context("rlvr", [], resilient_parsing=True)
    out = [f"`rlvr`: {root.help or ''}", ""]
    for name in root.list_commands(ctx):
        cmd = root.get_command(ctx, name)
        if cmd is None or cmd.hidden:
            continue
        sub = cmd.make_context(name, [], parent=ctx, resilient_parsing=True)
        out += [f"## `rlvr {name}`", "", (cmd.help or "").strip(), "", "```", cmd.get_usage(sub), "```", ""]
        rows = [_param_row(p, sub) for p in cmd.get_params(sub) if not getattr(p, "hidden", False)]
        rows = [r for r in rows if r]
        if rows:
            out += ["| argument / option | default | description |", "|---|---|---|", *rows, ""]
    return "\n".join(out)


def _param_row(p: Any, ctx: Any) -> str:
    if p.name == "help":
        return ""
    option = p.param_type_name == "option"
    names = ", ".join(f"`{o}`" for o in (p.opts + p.secondary_opts)) if option else f"`{(p.name or '').upper()}`"
    default = p.get_default(ctx)
    shown = "" if default in (None, (), [], False) else f"`{default}`"
    return f"| {names} | {shown} | {_escape(getattr(p, 'help', None) or '')} |"


def _escape(s: str) -> str:
    """One table cell: whitespace (newlines too) collapsed, pipes escaped."""
    return " ".join(s.replace("|", "\\|").split())


# --------------------------------------------------------------------------- the config


def config_reference() -> str:

    out = ["| key | type | default | description |", "|---|---|---|---|"]

    def walk(model: type[BaseModel], prefix: str) -> None:
        for name, field in model.model_fields.items():
            key = f"{prefix}{name}"
            nested = _model_of(field.annotation)
            default = field.get_default(call_default_factory=True)
            if nested is not None and (default is not None or field.is_required()):
                out.append(f"| **`{key}`** | section | | {_one_line(nested.__doc__)} |")
                walk(nested, key + ".")
                continue
            out.append(
                f"| `{key}` | {_type_name(field.annotation)} | {_default(default)} | {_one_line(field.description)} |"
            )
            if nested is not None:  # an optional section: its keys, when set
                walk(nested, key + ".")

    walk(TrainConfig, "")
    return "\n".join(out)


def _model_of(annotation: Any) -> Any:

    for arg in (annotation, *typing.get_args(annotation)):
        if isinstance(arg, type) and issubclass(arg, BaseModel):
            return arg
    return None


def _type_name(annotation: Any) -> str:
    if typing.get_origin(annotation) is typing.Literal:
        return " \\| ".join(f"`{a!r}`" for a in typing.get_args(annotation)).replace("'", '"')
    if isinstance(annotation, types.UnionType) or typing.get_origin(annotation) is typing.Union:
        return " \\| ".join(_type_name(a) for a in typing.get_args(annotation))
    if annotation is type(None):
        return "null"
    name = getattr(annotation, "__name__", None) or str(annotation).replace("typing.", "")
    return str(annotation).replace("typing.", "") if typing.get_args(annotation) else name


def _default(value: Any) -> str:
    if hasattr(value, "model_dump"):
        return ""
    return f"`{json.dumps(value, default=str)}`"


def _one_line(text: str | None) -> str:
    return " ".join((text or "").split()).replace("|", "\\|")


# --------------------------------------------------------------------------- the results


def results_pages() -> str:
    out = []
    for path in sorted(RESULTS.glob("*.json")):
        rec = json.loads(path.read_text())
        bars = rec.get("bars", [])
        mode = " (quick mode)" if rec.get("quick") else ""
        out += [
            f"## `{path.stem}`",
            "",
            f"`benchmarks/results/{path.name}`: commit `{rec.get('commit', '?')}`, {rec.get('date', '?')}, "
            f"{rec.get('cpus', '?')} CPUs, load {rec.get('load', '?')}{mode}",
            "",
        ]
        if bars:
            out += ["| bar | measured | target | met |", "|---|---|---|---|"]
            for b in bars:
                unit = b.get("unit", "")
                value, target = (
                    (_fmt_pct(b["value"]), _fmt_pct(b["target"]))
                    if unit == "%"
                    else (f"{b['value']:.3g}{unit}", f"{b['target']:.3g}{unit}")
                )
                out.append(
                    f"| {_one_line(b['name'])} | {value} | {b['op']} {target} | {'yes' if b.get('met') else '**no**'} |"
                )
            out.append("")
        printed = (rec.get("figures") or {}).get("lines")
        if printed:  # the run's last lines, as it printed them
            out += ["```", *printed, "```", ""]
        plot = (rec.get("figures") or {}).get("plot")
        if plot and not rec.get("quick") and (RESULTS / plot).exists():
            out += [f"![{path.stem}](../assets/results/{plot})", ""]
        figures = _flat(rec.get("figures", {}))
        if figures:
            out += ['??? note "every figure"', "", "    | figure | value |", "    |---|---|"]
            out += [f"    | `{k}` | {v} |" for k, v in figures[:400]]
            out.append("")
    return "\n".join(out)


def _fmt_pct(v: float) -> str:
    return f"{v:.2%}"


def _flat(x: Any, prefix: str = "") -> list[tuple[str, str]]:
    if isinstance(x, dict):
        return [kv for k, v in x.items() for kv in _flat(v, f"{prefix}{k}.")]
    if isinstance(x, list) and len(x) > 12:
        return [(prefix.rstrip("."), f"{len(x)} values")]
    if isinstance(x, float):
        return [(prefix.rstrip("."), f"{x:.4g}")]
    return [(prefix.rstrip("."), _one_line(json.dumps(x, default=str))[:200])]
