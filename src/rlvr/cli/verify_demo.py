"""``rlvr verify-demo``: verify built-in model outputs and show the verdict table,
including both kinds of death (format and verification)."""

from __future__ import annotations

from rich.table import Table

from rlvr.cli.console import console

#: (completion, gold, strict) rows that show each verdict status. Strict rows accept
#: only an explicit answer (tag, box, "the answer is"), as a trainer with a required
#: output format does.
DEMO_OUTPUTS: list[tuple[str, str, bool]] = [
    (r"<think>6 * 7</think><answer>42</answer>", "42", False),
    (r"The roots are $x=2$ or $x=3$, so the answer is $\boxed{2, 3}$.", r"x = 2 \text{ or } x = 3", False),
    (r"Half of it: $\boxed{\dfrac{1}{2}}$", "0.5", False),
    (r"So the probability is 50\%.", r"\frac12", False),
    (r"The solution set is $x \le 2$.", r"(-\infty, 2]", False),
    (r"Final Answer: The final answer is $1,234$. I hope it is correct.", "1234", False),
    (r"$\boxed{y = 2x + 3}$", "2x + 3 = y", False),
    (r"<answer>0.33</answer>", r"\frac{1}{3}", False),
    (r"<thought>x=2 and x=3</thought><output>x=2 or x=3</output>", "2, 3", True),
    (r"<answer>x=2</answer>", r"x = 2 \text{ or } x = 3", False),
    (r"\boxed{9^{9^{9^{9}}}}", "3", False),
    (r"I think it is 7", r"\frac{", False),
]


def verify_demo() -> None:
    """Verify built-in model outputs and print the verdicts."""
    from rlvr.verify.math import verify_math

    table = Table(title="rlvr demo: maths verdicts", show_lines=False)
    for col in ("completion", "gold", "strict", "status", "method", "reason"):
        table.add_column(col, overflow="fold", max_width=44 if col in ("completion", "reason") else 22)
    counts: dict[str, int] = {}
    for completion, gold, strict in DEMO_OUTPUTS:
        v = verify_math(completion, gold, strict=strict)
        counts[v.status.value] = counts.get(v.status.value, 0) + 1
        table.add_row(completion, gold, "yes" if strict else "", v.status.value, v.method.value, v.reason)
    console.print(table)
    console.print("verdicts: " + ", ".join(f"{k}={n}" for k, n in sorted(counts.items())))
    console.print(
        "format deaths (no_answer) and verification deaths (wrong) are kept apart; "
        "timeouts and bad golds are never scored as wrong."
    )
