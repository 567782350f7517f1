"""Where an lm-eval task's dataset comes from: the hub when online, else local copies mapped by
dataset id, config name and split.

A mapping key is ``ID``, ``ID:CONFIG``, ``ID:CONFIG:SPLIT`` or ``ID::SPLIT`` (any config); its value
is a folder (a hub snapshot, a ``save_to_disk`` folder, a datasets cache folder, a folder of split files:
``local_layouts.py`` tells which files hold which config and split), or one data file (for a split).
Keys come from ``--lmeval-data KEY=PATH``, from ``--lmeval-data-file FILE`` and from the file
``PROCTOR_LMEVAL_DATA`` names (YAML or JSON, ``KEY: PATH``, relative paths from the file's folder).
Splits are read when lm-eval asks for them (``local_files.py``), each recorded with its sha256.
"""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterator, Mapping

from proctor.core.errors import TaskDefinitionError
from proctor.data.hub import offline, unreachable
from proctor.dialects.lmeval import local_files
from proctor.dialects.lmeval.local_layouts import SplitSource, data_suffix, locate

if TYPE_CHECKING:
    import datasets

_LOCAL_BUILDERS = {"json", "csv", "parquet", "arrow", "text", "pandas", "imagefolder", "audiofolder"}


ANY = "*"  # the key of a folder of copies, one per dataset (``under_root``)


def parse_key(key: str) -> tuple[str, str | None, str | None]:
    parts = key.split(":")
    if len(parts) > 3 or not parts[0] or (parts[0] == ANY and len(parts) > 1):
        raise ValueError(
            f"a dataset key is ID, ID:CONFIG, ID:CONFIG:SPLIT, ID::SPLIT or * (a folder of copies), got '{key}'"
        )
    dataset, config, split = (parts + [None, None])[:3]
    assert dataset is not None  # parts[0], checked above
    return dataset, config or None, split or None


def under_root(root: Path, dataset: str) -> Path | None:
    """A dataset's copy in a folder of copies (key ``*``): ``ROOT/ORG/NAME`` (``huggingface-cli download
    --local-dir ROOT/ORG/NAME``), ``ROOT/ORG___NAME`` (a datasets cache folder), the one snapshot of
    ``ROOT/datasets--ORG--NAME`` (a hub cache folder), or ``ROOT/NAME``; None: none there."""
    org, _, name = dataset.rpartition("/")
    hub = root / f"datasets--{org}--{name}" / "snapshots" if org else root / f"datasets--{name}" / "snapshots"
    revisions = sorted(p for p in hub.iterdir() if p.is_dir()) if hub.is_dir() else []
    candidates = [root / dataset, root / dataset.replace("/", "___"), *(revisions if len(revisions) == 1 else [])]
    candidates.append(root / name)
    return next((c for c in candidates if c.is_dir()), None)


def read_mapping_file(path: str | Path) -> dict[str, str]:
    import yaml

    file = Path(path).expanduser()
    if not file.is_file():
        raise TaskDefinitionError("lm-eval data mapping file not found", file=file)
    from proctor.core.yaml_bounds import safe_load
    from proctor.core.yaml_lines import read_text, yaml_error

    text = read_text(file)
    try:
        document = safe_load(text)
    except yaml.YAMLError as exc:
        raise yaml_error(exc, file, text) from None
    if not isinstance(document, dict) or not all(isinstance(v, str) for v in document.values()):
        raise TaskDefinitionError("the mapping file holds 'DATASET_ID[:CONFIG[:SPLIT]]: PATH' entries", file=file)
    out = {}
    for key, value in document.items():
        try:
            parse_key(str(key))
        except ValueError as exc:
            raise TaskDefinitionError(str(exc), file=file, field=str(key)) from None
        target = Path(value).expanduser()
        out[str(key)] = str(target if target.is_absolute() else (file.parent / target).resolve())
    return out


class Splits(dict):
    """The splits of a mapped dataset, each read when lm-eval first asks for it (a hub snapshot mapped whole
    holds every config's files; only the task's are read). A missing one is an error naming id, config and
    split, except a split lm-eval only reads for few-shot examples, which is empty (checked when shots are
    drawn). ``read``: split -> the paths read and their sha256 (results.json's ``data.files``)."""

    def __init__(
        self,
        dataset: str,
        config: str | None,
        sources: dict[str, SplitSource],
        needed: set[str],
        problems: list[str] | None = None,
    ) -> None:
        super().__init__()
        self.dataset, self.config, self.needed = dataset, config, needed
        self.sources, self.problems = sources, problems or []
        self.missing: set[str] = set()
        self.read: dict[str, local_files.ReadFiles] = {}
        self.source: Path | None = None  # the task file asking, named in errors

    def __missing__(self, split: str) -> datasets.Dataset:
        found = self.sources.get(split)
        if found is not None:
            if found.error:
                raise TaskDefinitionError(found.error, file=self.source, field="dataset_path")
            loaded = local_files.read(found)
            if loaded is None:  # a save_to_disk folder whose dataset_dict.json names a split it lacks
                raise TaskDefinitionError(
                    f"split '{split}' of the save_to_disk folder {found.paths[0]} cannot be read", file=found.paths[0]
                )
            self[split] = loaded
            self.read[split] = local_files.provenance(found)
            return loaded
        if split in self.needed:
            if self.problems:  # a layout that could not be told apart (a config not found)
                raise TaskDefinitionError(self.problems[0], file=self.source, field="dataset_path")
            have = ", ".join(sorted(self.sources)) or "none"
            raise TaskDefinitionError(
                f"no local copy of dataset '{self.dataset}' config '{self.config}' split '{split}' "
                f"(the copy has: {have}; map one with --lmeval-data {self.dataset}:{self.config or ''}:{split}=PATH)",
                file=self.source,
                field="dataset_path",
            )
        import datasets

        self.missing.add(split)
        return datasets.Dataset.from_list([])


def _one_split(key: str, path: Path, dataset: str, config: str | None, split: str) -> SplitSource:
    """The source a ``ID:CONFIG:SPLIT=PATH`` key names: a file, a save_to_disk Dataset, or that split of a folder."""
    if path.is_file():
        if data_suffix(path) is None:
            raise TaskDefinitionError(
                f"--lmeval-data {key}: not a data file (.jsonl, .json, .parquet, .csv, .arrow, .jsonl.gz)", file=path
            )
        return SplitSource(split, (path,))
    located = locate(path, dataset, config)
    if "" in located.splits:  # the folder is one save_to_disk Dataset
        return SplitSource(split, (path,), form="save_to_disk")
    if split in located.splits:
        return located.splits[split]
    have = ", ".join(sorted(located.splits)) or "none"
    why = f"; {located.problem}" if located.problem else ""
    raise TaskDefinitionError(f"--lmeval-data {key}: no '{split}' data in {path} (it has: {have}){why}", file=path)


def lookup(mapping: Mapping[str, str], dataset: str, config: str | None, needed: set[str]) -> Splits | None:
    """The mapped copies of ``dataset`` / ``config`` (None: not mapped). A key naming a split wins over a
    folder mapped for all splits; of two such folders, the first listed."""
    sources: dict[str, SplitSource] = {}
    problems: list[str] = []
    found = False
    named = {key: value for key, value in mapping.items() if parse_key(key)[0] == dataset}
    if not named:  # a folder of copies holding this dataset's
        for root in (Path(v).expanduser() for k, v in mapping.items() if k == ANY):
            copy = under_root(root, dataset) if root.is_dir() else None
            if copy is not None:
                named = {dataset: str(copy)}
                break
    for key, value in named.items():
        d, c, s = parse_key(key)
        if d != dataset or (c is not None and c != config):
            continue
        found = True
        path = Path(value).expanduser()
        if not path.exists():
            raise TaskDefinitionError(f"--lmeval-data {key}: the mapped local copy does not exist", file=path)
        if s is not None:
            sources[s] = _one_split(key, path, dataset, config, s)
            continue
        located = locate(path, dataset, config) if path.is_dir() else None
        if located is None or "" in located.splits:
            raise TaskDefinitionError(
                f"--lmeval-data {key}: {value} holds one split; name it (ID:CONFIG:SPLIT)", file=value
            )
        if located.problem:
            problems.append(located.problem)
        for name, source in located.splits.items():
            sources.setdefault(name, source)
    return Splits(dataset, config, sources, needed, problems) if found else None


def _local_files(path: str | None, kwargs: Mapping[str, object]) -> list[tuple[str, str]]:
    """``(key, path)`` of each local file or folder a ``load_dataset`` call would read."""
    named: list[tuple[str, str]] = []
    if path and path not in _LOCAL_BUILDERS:
        named.append(("dataset_path", str(path)))
    if kwargs.get("data_dir"):
        named.append(("dataset_kwargs.data_dir", str(kwargs["data_dir"])))
    files = kwargs.get("data_files")
    values = files.values() if isinstance(files, Mapping) else [files] if files else []
    for value in values:
        named += [
            ("dataset_kwargs.data_files", str(v)) for v in (value if isinstance(value, (list, tuple)) else [value])
        ]
    return named


def check_local(path: str | None, kwargs: Mapping[str, object], roots: tuple[Path, ...], source: Path | None) -> None:
    """Local dataset files stay in the task's folder or a folder the user named (``data/paths.py``)."""
    from proctor.data.paths import check_inside

    for key, value in _local_files(path, kwargs):
        if "://" in value:
            continue  # a URL: datasets downloads it (a hub-like source, not a local file)
        check_inside(Path(value).expanduser(), roots, written=value, file=source, field=key)


def _local_splits(loaded: object, path: str | None, split_keys: Mapping[str, str], source: Path | None) -> object:
    """A ``DatasetDict`` read by a local builder, whose missing split is an error naming the task file's key that
    asks for it and the splits there are (lm-eval's own ``self.dataset[split]`` is a bare KeyError)."""
    import datasets

    if not isinstance(loaded, datasets.DatasetDict):
        return loaded

    class LocalSplits(datasets.DatasetDict):
        def __missing__(self, split: str) -> datasets.Dataset:
            key = split_keys.get(split, "test_split")
            raise TaskDefinitionError(
                f"{key} '{split}' is not a split of the local dataset '{path}' (it has: {', '.join(self) or 'none'})",
                file=source,
                field=key,
            )

    return LocalSplits(loaded)


@contextlib.contextmanager
def serving(
    mapping: Mapping[str, str],
    needed: set[str],
    task: str,
    source: Path | None,
    roots: tuple[Path, ...] = (),
    split_keys: Mapping[str, str] | None = None,
) -> Iterator[list]:
    """While lm-eval builds a task, ``datasets.load_dataset`` reads mapped local copies first, then
    the hub (unless offline). Yields a list that receives each ``Splits`` handed out. Local files a
    task names itself (``dataset_path``, ``dataset_kwargs``) must lie in ``roots``; ``split_keys``
    (split -> the task file's key naming it) words the error for a split a local dataset lacks."""
    import datasets

    real = datasets.load_dataset
    handed: list = []

    def load_dataset(path: str | None = None, name: str | None = None, *args: Any, **kwargs: Any) -> Any:
        path = kwargs.pop("path", path)
        name = kwargs.pop("name", name)
        if path in _LOCAL_BUILDERS or (path and Path(str(path)).expanduser().exists()):
            check_local(path, kwargs, roots, source)
            # datasets keys its prepared copy of local files by their path and modification time only: a file
            # replaced by a corrected one of the same mtime (cp -p, tar, rsync -t) would be served from the stale
            # copy. Rebuilt from the files on every load, the rows are the files' as they are now (a task that
            # sets its own download_mode keeps it)
            if kwargs.get("download_mode") is None:
                kwargs["download_mode"] = "force_redownload"
            try:
                loaded = real(path, name, *args, **kwargs)
            except FileNotFoundError as exc:  # datasets: "Unable to find '...'"
                field = next(
                    (f"dataset_kwargs.{k}" for k in ("data_files", "data_dir") if kwargs.get(k)), "dataset_path"
                )
                raise TaskDefinitionError(f"task '{task}': {exc}", file=source, field=field) from None
            return _local_splits(loaded, path, split_keys or {}, source)
        splits = lookup(mapping, str(path), name, needed)
        if splits is not None:
            splits.source = source
            handed.append(splits)
            return splits
        wanted = ", ".join(sorted(needed)) or "?"
        hint = f"map a local copy with --lmeval-data {path}:{name or ''}:SPLIT=PATH (or --lmeval-data-file)"
        copies = [v for k, v in mapping.items() if k == ANY]
        if copies:
            org, _, short = str(path).rpartition("/")
            hint += (
                f"; the folder(s) of copies {', '.join(copies)} hold none as {path}, {org}___{short}, "
                f"datasets--{org}--{short} or {short}"
            )
        reason = None if offline() else unreachable()  # fail now, not after the hub client's retries
        if offline() or reason is not None:
            why = f" ({reason})" if reason else ""
            raise TaskDefinitionError(
                f"task '{task}': dataset not available offline{why}: '{path}' "
                f"config '{name}' split(s) {wanted}; {hint}",
                file=source,
                field="dataset_path",
            )
        try:
            return real(path, name, *args, **kwargs)
        except Exception as exc:
            raise TaskDefinitionError(
                f"task '{task}': cannot read dataset '{path}' config '{name}' split(s) {wanted} from the hub "
                f"({type(exc).__name__}: {str(exc)[:200]}); {hint}",
                file=source,
                field="dataset_path",
            ) from None

    datasets.load_dataset = load_dataset
    try:
        yield handed
    finally:
        datasets.load_dataset = real
