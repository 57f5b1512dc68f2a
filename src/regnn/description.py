"""A custom graph's description (dataset.yaml, dataset.yml or dataset.json; docs/custom_data.md), read without the
data layer: train.py names a run's folder after the graph (`name:`, else the description's folder) before torch
is imported, and the loaders read the same file through the same function."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Mapping

from regnn.errors import DataError

DOC = "see docs/custom_data.md"
META_NAMES = ("dataset.yaml", "dataset.yml", "dataset.json")


def not_a_file(p: Path) -> str | None:
    """Why p cannot be read as a file (a folder, a broken link or a link loop, missing), or None if it can."""
    try:
        if p.is_file():
            return None
        if p.is_dir():
            return f"{p} is a folder, not a file"
        if p.is_symlink():
            return f"{p} is a link that leads to no file (broken, or a loop of links)"
        if p.exists():
            return f"{p} is not a regular file"
    except OSError as e:  # a loop of links, a folder that cannot be listed
        return f"{p} cannot be reached ({e.strerror or type(e).__name__})"
    return None if p.exists() else f"{p} is missing"


def read_meta(path: str | Path | None) -> tuple[dict, Path]:
    """The description and its file (relative paths in it start from the file's folder)."""
    import yaml

    if path in (None, "", "???"):
        raise DataError(f"dataset=custom needs dataset.path=/path/to/dataset.yaml (a description of your files; {DOC})")
    p = Path(path).expanduser()
    if p.is_dir():
        found = [p / n for n in META_NAMES if (p / n).is_file()]
        if not found:
            raise DataError(f"{p} holds none of {list(META_NAMES)}; write one describing your files ({DOC})")
        if len(found) > 1:
            raise DataError(
                f"{p} holds {' and '.join(f.name for f in found)}: which describes the graph is not clear; keep one, "
                "or give dataset.path=<that file>"
            )
        p = found[0]
    if (why := not_a_file(p)) is not None:
        raise DataError(f"dataset.path={path}: " + ("no such file or folder" if why.endswith("is missing") else why))
    try:
        text = p.read_text()
        meta = json.loads(text, object_pairs_hook=_unique_pairs) if p.suffix == ".json" else _yaml_unique(text)
    except _Repeated as e:
        raise DataError(f"{p}: key {e.key!r} is given twice{e.where}; give each key once") from None
    except (ValueError, yaml.YAMLError) as e:
        raise DataError(f"{p} is not valid {'JSON' if p.suffix == '.json' else 'YAML'}: {e}") from e
    if not isinstance(meta, dict):
        raise DataError(f"{p} must hold a mapping of keys (format, ...), not {type(meta).__name__}; {DOC}")
    return meta, p


class _Repeated(Exception):
    def __init__(self, key, where: str = ""):
        super().__init__(key)
        self.key, self.where = key, where


def _unique_pairs(pairs):
    seen = {}
    for k, v in pairs:
        if k in seen:
            raise _Repeated(k)
        seen[k] = v
    return seen


def _yaml_unique(text: str):
    """yaml.safe_load, refusing a key given twice in one mapping (PyYAML would keep the last silently)."""
    import yaml

    class Loader(yaml.SafeLoader):
        pass

    def mapping(loader, node, deep=False):
        keys = set()
        for k, _ in node.value:
            key = loader.construct_object(k, deep=deep)
            if isinstance(key, (str, int, float, bool)) and key in keys:
                raise _Repeated(key, f" (line {k.start_mark.line + 1})")
            if isinstance(key, (str, int, float, bool)):
                keys.add(key)
        return loader.construct_mapping(node, deep=deep)

    Loader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, mapping)
    return yaml.load(text, Loader=Loader)  # noqa: S506  (a SafeLoader subclass: no arbitrary objects)


def graph_name(dataset: Mapping[str, Any]) -> str:
    """The graph's own name: a custom description's `name:` (else its folder's name), else the dataset's name."""
    if dataset.get("format") == "custom" and dataset.get("path"):
        meta, desc = read_meta(dataset["path"])
        return str(meta.get("name") or desc.parent.name or dataset.get("name"))
    return str(dataset.get("name"))


def relation_label(name: str, ends: list[str] | None) -> str:
    """A relation as a reader names it: its name, with its direction where the name does not already say it."""
    if not ends or name.startswith("self:") or name == f"{ends[0]}->{ends[1]}":
        return name
    return f"{name} ({ends[0]}->{ends[1]})"
