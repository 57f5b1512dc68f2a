"""Regenerate the results sections of README.md and of the pages in docs/ from the committed files in results/.

    python -m regnn.reporting.readme      (also run by `make tables` and `make readme`)

In every page of PAGES, everything between the markers <!-- results:start --> and <!-- results:end --> is
replaced by the parts listed for it (nothing there is typed by hand): a markdown table of results/ with its title
demoted to a sub-heading, a figure, or a section rendered from a JSON result. Every part names the file it comes
from. Headings must be unique within a page's generated section (GitHub's anchors would collide otherwise):
a part whose file title is shared with another file gets its own heading here.
"""

from __future__ import annotations

import re
import sys
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from regnn.paths import REPO_ROOT

START, END = "<!-- results:start -->", "<!-- results:end -->"
# README's table of the experiment targets, from their declarations (regnn.reporting.experiments)
EXPERIMENTS_START, EXPERIMENTS_END = "<!-- experiments:start -->", "<!-- experiments:end -->"


@dataclass(frozen=True)
class Part:
    file: str  # path under results/
    heading: str | None = None  # None: the markdown file's own title


# what each page shows; missing files are skipped
CLASSIFICATION = Part("table_classification.md")
PAPER = [
    CLASSIFICATION,
    Part("table_paper_text.md"),
    Part("table_baselines.md"),
    Part("table_clustering.md"),
    Part("table_ablation.md"),
    Part("table_backbones.md"),
    Part("fig_backbones.png", "Figure 3: plain vs RE backbones (DBLP, ACM)"),
    Part("fig_tsne.png", "Figure 5: t-SNE of DBLP author representations"),
    Part("table_lambda.md"),
    Part("fig_lambda.png", "Figure 6: first-layer relation weights per lambda (DBLP)"),
    Part("fig_case_study.png", "Figure 7: relation weights of a 4-layer RE-GCN on DBLP, every layer"),
    Part("table_efficiency.md", "Efficiency on DBLP (Figure 8): table"),
    Part("fig_efficiency.png", "Efficiency on DBLP (Figure 8): chart"),
    *(
        Part(
            f"stack_check_{d}_cpu.md",
            f"Cells trained on another stack or device, re-measured on today's ({d.upper()}, "
            "scripts/checks/stack_check.py)",
        )
        for d in ("dblp", "acm", "imdb")
    ),
]
PAGES = {
    "README.md": [CLASSIFICATION],
    "docs/reproduction.md": PAPER,
    "docs/performance.md": [
        Part("benchmark.md", "Benchmark: time per epoch and memory, plain vs RE"),
        Part("benchmark_gcn_9/benchmark.md", "Benchmark: GCN vs RE-GCN, 9 processes per cell"),
        Part("benchmark_dblp_gat/benchmark.md", "Benchmark: GAT and RE-GAT on DBLP, 3 processes per cell"),
        Part("scale_growth.md", "How a mini-batch epoch's cost grows with the graph (scripts/bench/scale_growth.py)"),
        Part("fig_scale_growth.png", "Seconds and memory per mini-batch epoch, 5% to 100% of OGBN-MAG's size"),
    ],
    "docs/scale.md": [
        Part("scale_benchmark_scale0.05.md", "Scale benchmark: 5% size, one whole epoch per model"),
        Part("scale_benchmark_epoch.md", "Scale benchmark: full size, one whole epoch per model, profiled"),
        Part("scale_benchmark_paired.md", "Training speed against the DGL-era code, run in turn (full size)"),
        Part(
            "trainers.md",
            "Full batch against mini-batch on graphs that fit in memory (scripts/checks/trainers_table.py)",
        ),
        Part(
            "scale_accuracy_check.md",
            "Mini-batch accuracy at OGBN-MAG's shape, code by code (scripts/checks/scale_accuracy_check.py)",
        ),
    ],
    "docs/gpu.md": [
        Part("gpu_dblp.md", "GPU training on DBLP through train.py (scripts/bench/gpu_check.sh)"),
        Part(
            "gpu_dblp_backbones.md",
            "Figure 3's GIN, GraphSAGE and MixHop and the GTN baseline on "
            "the GPU (scripts/bench/gpu_check.sh, 3 seeds)",
        ),
    ],
    "docs/custom_data.md": [
        Part(
            "tune_protocol.md",
            "Tuning protocols: the search's best, the finalists' choice and "
            "the configured setting (scripts/checks/tune_protocol.py)",
        ),
        Part("defaults_check.md", "Defaults on a graph without tuned settings (scripts/checks/defaults_check.py)"),
        Part(
            "defaults_check_bow.md",
            "Defaults on a bag-of-words graph (scripts/checks/defaults_check.py --generator bow)",
        ),
        Part(
            "defaults_check_ids.md",
            "Defaults on a graph without features (scripts/checks/defaults_check.py --generator ids)",
        ),
        Part(
            "defaults_check_bowfew.md",
            "Defaults on a bag-of-words graph with few labels (--generator bow --graph train_share=0.05,seed=0)",
        ),
    ],
}


def _link(page: str, file: str) -> str:
    prefix = "../" * page.count("/")
    return f"{prefix}results/{file}"


def _markdown_part(text: str, heading: str | None) -> str:
    """The file's headings demoted by two levels; its title replaced by `heading` when given."""
    text = re.sub(r"^(#+) ", lambda m: "#" * (len(m.group(1)) + 2) + " ", text.strip(), flags=re.M)
    if heading:
        text = re.sub(r"^### .*$", f"### {heading}", text, count=1, flags=re.M)
    return text


def render_part(page: str, part: Part, results: Path) -> str | None:
    p = results / part.file
    if not p.exists():
        return None
    source = f"_Source: [results/{part.file}]({_link(page, part.file)})._"
    if p.suffix == ".md":
        return _markdown_part(p.read_text(), part.heading) + "\n\n" + source
    if p.suffix == ".png":
        return f"### {part.heading}\n\n![{part.heading}]({_link(page, part.file)})"
    raise ValueError(f"{part.file}: a page part is a .md table or a .png figure")


def headings(text: str) -> list[str]:
    return [h.strip() for h in re.findall(r"^#+ (.*)$", text, flags=re.M)]


def _distinct_subheadings(text: str, file: str, seen: set[str]) -> str:
    """A sub-heading that an earlier part of the page already has gets the part's file name appended."""

    def sub(m):
        h = m.group(2).strip()
        return f"{m.group(1)} {h} ({file})" if h in seen else m.group(0)

    return re.sub(r"^(####+) (.*)$", sub, text, flags=re.M)


def section(page: str, results: Path) -> str:
    parts, seen = [], set()
    for part in PAGES[page]:
        t = render_part(page, part, results)
        if t:
            t = _distinct_subheadings(t, part.file, seen)
            seen.update(headings(t))
            parts.append(t)
    text = "\n\n".join(parts) if parts else "_No results yet: `make reproduce` trains and renders them._"
    dup = [h for h, n in Counter(headings(text)).items() if n > 1]
    if dup:
        raise ValueError(f"{page}: generated headings repeat: {dup}; give the parts their own heading in PAGES")
    return text


def generated(text: str) -> str:
    """The generated section of a page's text ('' when it has none)."""
    if START not in text or END not in text:
        return ""
    return text[text.index(START) + len(START) : text.index(END)]


def update(page_path: Path, page: str, results: Path) -> bool:
    text = page_path.read_text()
    if START not in text or END not in text:
        raise SystemExit(f"{page_path} lacks the markers {START} / {END}: add them where the results go")
    new = text[: text.index(START) + len(START)] + "\n" + section(page, results) + "\n" + text[text.index(END) :]
    if new != text:
        page_path.write_text(new)
    return new != text


def update_experiments(page_path: Path, table: str) -> bool:
    text = page_path.read_text()
    if EXPERIMENTS_START not in text or EXPERIMENTS_END not in text:
        raise SystemExit(f"{page_path} lacks the markers {EXPERIMENTS_START} / {EXPERIMENTS_END}")
    new = (
        text[: text.index(EXPERIMENTS_START) + len(EXPERIMENTS_START)]
        + "\n"
        + table
        + "\n"
        + text[text.index(EXPERIMENTS_END) :]
    )
    if new != text:
        page_path.write_text(new)
    return new != text


def update_all(root: Path = REPO_ROOT, results: Path | None = None, experiments: str | None = None) -> list[str]:
    """Regenerates every page of PAGES, and README's experiment table where `experiments` gives it
    (regnn.reporting.experiments.experiments_table; `make tables`); returns the pages that changed."""
    results = results or root / "results"
    changed = [page for page in PAGES if update(root / page, page, results)]
    if experiments is not None and update_experiments(root / "README.md", experiments) and "README.md" not in changed:
        changed.append("README.md")
    return changed


if __name__ == "__main__":
    changed = update_all()
    print(
        "regenerated: " + (", ".join(changed) if changed else "nothing (every page already up to date)"),
        file=sys.stderr,
    )
