"""README.md and docs/ stay short, undated and consistent: no diary phrases, a README of at most 200 lines, unique
headings in the generated results sections, links that resolve, and generated sections that match results/."""

import json
import re
import subprocess

import pytest

from conftest import REPO
from regnn.reporting import readme
from regnn.reporting.experiments import EXPERIMENTS

PAGES = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]

# phrases that date a text or tell a story of how it came about; history lives in git
NARRATIVE = [
    r"\blast time\b",
    r"\bhalf an hour later\b",
    r"\bthis session\b",
    r"\b(earlier|last|previous) session\b",
    r"\bon a (faster|slower) VM\b",
    r"\bclean clone\b.*\blater\b",
    r"\bbefore the fix\b",
    r"\byesterday\b",
    r"\bmeasured (on|at) 20\d\d\b",
    r"\bissue #?\d+\b",
    r"\bwe (then|later) \w+",
    r"\bat first\b",
    r"\bnot yet timed\b",
    r"\bafter those measurements\b",
]
NARRATIVE = [p.replace(" ", r"\s+") for p in NARRATIVE]  # a phrase may wrap onto the next line
DATE = r"\b20\d\d-[01]\d-[0-3]\d\b|\b[0-2]\d:[0-5]\d\b"  # 2026-11-27, 07:41


def prose(text: str) -> str:
    """The page without its generated section (which quotes the results files, their timestamps included)."""
    gen = readme.generated(text)
    return text.replace(gen, "") if gen else text


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_no_dated_narrative(page):
    text = page.read_text()
    found = [m.group(0) for pat in NARRATIVE for m in re.finditer(pat, text, flags=re.I)]
    assert not found, f"{page.name}: diary phrases {found}; state the fact without when it was found"
    dates = re.findall(DATE, prose(text))
    assert not dates, f"{page.name}: dates or times {dates} outside the generated section"


def test_narrative_patterns_catch_what_they_are_for():
    diary = "Half an hour later from a clean clone, on a faster VM (2026-11-27 07:41) it took 3 s; this session"
    assert sum(bool(re.search(p, diary, flags=re.I)) for p in NARRATIVE) >= 3
    assert re.findall(DATE, diary) == ["2026-11-27", "07:41"]


def test_readme_is_short():
    n = len((REPO / "README.md").read_text().splitlines())
    assert n <= 200, f"README.md has {n} lines; move detail into docs/"


def test_generated_sections_have_unique_headings():
    for page in readme.PAGES:
        text = (REPO / page).read_text()
        gen = readme.generated(text)
        assert gen.strip(), f"{page} lacks its generated section ({readme.START} ... {readme.END})"
        heads = readme.headings(gen)
        assert len(heads) == len(set(heads)), (
            f"{page}: repeated headings {sorted({h for h in heads if heads.count(h) > 1})}"
        )
        # and none of them repeats a heading of the page's own text
        own = readme.headings(prose(text))
        assert not set(heads) & set(own), f"{page}: generated headings also in the text: {set(heads) & set(own)}"


def test_duplicate_headings_are_refused(tmp_path, monkeypatch):
    (tmp_path / "a.md").write_text("# Scale benchmark\n\nx\n")
    (tmp_path / "b.md").write_text("# Scale benchmark\n\ny\n")
    monkeypatch.setitem(readme.PAGES, "README.md", [readme.Part("a.md"), readme.Part("b.md")])
    with pytest.raises(ValueError, match="repeat"):
        readme.section("README.md", tmp_path)
    monkeypatch.setitem(readme.PAGES, "README.md", [readme.Part("a.md"), readme.Part("b.md", "Scale, the other")])
    assert readme.headings(readme.section("README.md", tmp_path)) == ["Scale benchmark", "Scale, the other"]


def test_generated_sections_match_results():
    """Every page's generated section is what `make readme` writes from the committed results/."""
    for page in readme.PAGES:
        gen = readme.generated((REPO / page).read_text())
        assert gen.strip() == readme.section(page, REPO / "results").strip(), (
            f"{page} is out of date with results/: run `make readme`"
        )


def test_readme_links_resolve():
    text = (REPO / "README.md").read_text()
    links = re.findall(r"\]\(((?:docs|results)/[^)#\s]+)", text)
    assert any(link.startswith("docs/") for link in links)
    missing = [link for link in links if not (REPO / link).exists()]
    assert not missing, f"README links to missing files: {missing}"
    for page in (REPO / "docs").glob("*.md"):
        rel = re.findall(r"\]\(([\w./-]+\.(?:md|png|json|csv))\)", page.read_text())
        bad = [r for r in rel if not (page.parent / r).resolve().exists()]
        assert not bad, f"{page.name} links to missing files: {bad}"


def test_readme_names_every_experiment_target():
    from regnn.reporting.experiments import experiments_table

    text = (REPO / "README.md").read_text()
    block = text[
        text.index(readme.EXPERIMENTS_START) + len(readme.EXPERIMENTS_START) : text.index(readme.EXPERIMENTS_END)
    ]
    assert block.strip() == experiments_table(), "README's experiment table is stale: run `make tables`"
    for e in EXPERIMENTS:
        assert f"make {e.target}" in text, f"README's target list lacks `make {e.target}` ({e.item})"
    # the Makefile's experiment targets are the declared ones (and Figure 8's measurement has its own rule)
    r = subprocess.run(
        ["make", "-s", "--eval", "print-targets: ; @echo $(EXPERIMENT_TARGETS)", "print-targets"],
        cwd=REPO,
        capture_output=True,
        text=True,
    )
    assert sorted(r.stdout.split()) == sorted(e.target for e in EXPERIMENTS if e.renderer), r.stderr
    assert re.search(r"^fig-efficiency:", (REPO / "Makefile").read_text(), flags=re.M)


def test_layout_matches_the_tree():
    text = (REPO / "README.md").read_text()
    layout = text[text.index("## Layout") :]
    for path in re.findall(r"^([\w./]+/?)\s", layout.split("```")[1], flags=re.M):
        assert (REPO / path).exists(), f"README's Layout names {path}, which does not exist"
    for pkg in (REPO / "src" / "regnn").iterdir():
        if pkg.is_dir() and (pkg / "__init__.py").exists():
            assert f"src/regnn/{pkg.name}/" in layout, f"README's Layout lacks src/regnn/{pkg.name}/"


def _fake_cell(cells, name, f1):
    d = cells / name
    d.mkdir(parents=True)
    m = {k: {"mean": f1, "std": 0.5} for k in ("test_macro_f1", "test_micro_f1")}
    m |= {k: {"mean": 1.0, "std": 0.0} for k in ("epoch_time_s", "train_time_s")}
    dataset, model = name.split("_", 1)
    (d / "results.json").write_text(json.dumps({"dataset": dataset, "model": model, "runs": 10, "metrics": m}))
    run = {"layers": [{"author->paper": 1.5, "paper->author": 0.5}] * 4}
    (d / "relation_weights.json").write_text(json.dumps([run, run]))


def test_make_tables_renders_what_is_trained_and_keeps_the_rest(tmp_path, capsys):
    """`make tables`: a table whose cells all exist is rendered, one with missing cells is named and left alone."""
    from regnn.reporting import experiments

    cells, out = tmp_path / "cells", tmp_path / "results"
    for d in ("dblp", "acm", "imdb"):
        for m in ("gcn", "gat", "re_gcn", "re_gat"):
            _fake_cell(cells, f"{d}_{m}", 90.0)
    out.mkdir()
    (out / "table_ablation.md").write_text("committed\n")
    assert experiments.main(["--cells", str(cells), "--out", str(out)]) == 0
    lines = capsys.readouterr().out
    assert "rendered results/table_classification.csv" in lines
    assert "| DBLP | RE-GCN | 10 | 90.00 ± 0.50 |" in (out / "table_classification.md").read_text()
    for e in experiments.EXPERIMENTS:  # every table and figure is named
        assert e.item in lines
    assert "kept results/table_ablation.csv" in lines and "make table-ablation" in lines
    assert (out / "table_ablation.md").read_text() == "committed\n"  # not overwritten by a partial table


def _diff_files(page: str) -> dict[str, str]:
    """The new files of a page's diff: path -> text."""
    text = (REPO / "docs" / page).read_text()
    diff = text[text.index("```diff") :]
    diff = diff[: diff.index("\n```\n")]
    files, current = {}, None
    for line in diff.splitlines():
        if line.startswith("+++ b/"):
            current = line[len("+++ b/") :]
            files[current] = []
        elif current and line.startswith("+"):
            files[current].append(line[1:])
    return {p: "\n".join(lines) + "\n" for p, lines in files.items()}


def test_the_experiment_example_is_one_config_and_one_renderer_that_work(tmp_path):
    """docs/adding_an_experiment.md: its config, dropped into conf/experiment/, is declared (target, item,
    outputs, the sweep's datasets and models); its renderer renders fake cells into the declared files."""
    import importlib.util

    from regnn.reporting.cells import CellPool
    from regnn.reporting.experiments import declared

    files = _diff_files("adding_an_experiment.md")
    assert sorted(files) == ["conf/experiment/table_depth.yaml", "src/regnn/reporting/depth.py"]
    conf = tmp_path / "conf"
    conf.mkdir()
    (conf / "table_depth.yaml").write_text(files["conf/experiment/table_depth.yaml"])
    (e,) = declared(conf)
    assert (e.target, e.renderer, e.datasets, e.models) == ("table-depth", "depth", ("dblp",), ("gcn", "re_gcn"))
    spec = importlib.util.spec_from_file_location("depth_example", tmp_path / "depth.py")
    (tmp_path / "depth.py").write_text(files["src/regnn/reporting/depth.py"])
    depth = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(depth)
    cells = tmp_path / "cells"
    for m in ("gcn", "re_gcn"):
        for k in (2, 4, 6):
            _fake_cell(cells, f"dblp_{m}_layers{k}", 80.0 + k)
            r = cells / f"dblp_{m}_layers{k}" / "results.json"
            r.write_text(json.dumps({**json.loads(r.read_text()), "model": m}))
    written = depth.render(CellPool(cells), tmp_path / "out", list(e.datasets))
    assert sorted(p.name for p in written) == sorted(e.outputs)
    assert "| DBLP | RE-GCN | 6 | 86.00 ± 0.50 |" in (tmp_path / "out" / "table_depth.md").read_text()


def test_the_paper_is_cited_as_the_journal_it_appeared_in():
    """RE-GNN appeared in IEEE Transactions on Big Data (the authors' readme); no page or table may call it TKDE, and
    CITATION.cff names the journal, volume and pages."""
    import yaml

    cff = yaml.safe_load((REPO / "CITATION.cff").read_text())
    paper = cff["preferred-citation"]
    assert paper["journal"] == "IEEE Transactions on Big Data"
    assert (paper["volume"], paper["start"], paper["end"], paper["year"]) == (9, 1697, 1710, 2023)
    assert [a["family-names"] for a in paper["authors"]] == ["Wang", "Guo", "Yang", "Wang"]
    pages = [*PAGES, *sorted((REPO / "results").glob("*.md")), REPO / "src/regnn/resources/paper_numbers.yaml"]
    for page in pages:
        for line in page.read_text().splitlines():
            assert not re.search(r"RE-GNN[^.]*\bTKDE\b", line), f"{page.name}: {line}"
