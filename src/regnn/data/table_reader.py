"""The one reader of `format: tables` files (CSV or parquet): every cell as written, every row located.

A CSV file is UTF-8 (with or without a byte-order mark) or UTF-16 or UTF-32 with its byte-order mark. Every CSV
column is read as text exactly as written, with no null sentinels (`NA`, `null`, `nan` and `None` are text); only an
empty cell is empty. Parquet columns keep their types; a null is an empty cell. A header repeated as a row, or a
column name given twice, is refused. Rows are located as the file's line (CSV: the header is line 1, blank lines
and line breaks inside quoted values count) or as the data row (parquet: row 1 is the first), and every message
names the file.
"""

from __future__ import annotations

import codecs
import csv
import io
import logging
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pyarrow as pa

from regnn.data.custom_schema import DOC
from regnn.errors import DataError, quote

PARQUET = (".parquet", ".pq")
LOUD_BYTES = 64 << 20  # a table this large is read with a line before and after: a large graph loads in minutes
log = logging.getLogger("regnn")
BOMS = ((codecs.BOM_UTF32_LE, "utf-32"), (codecs.BOM_UTF32_BE, "utf-32"), (codecs.BOM_UTF16_LE, "utf-16"))
BOMS += ((codecs.BOM_UTF16_BE, "utf-16"), (codecs.BOM_UTF8, "utf-8-sig"))
SAVE_AS = "save it as UTF-8 (e.g. Excel's 'CSV UTF-8')"


@dataclass
class Table:
    """A table as read: its columns (pyarrow), and where its rows are in the file."""

    path: Path
    data: pa.Table
    encoding: str | None = None  # a CSV file's text encoding; None: parquet

    def __len__(self) -> int:
        return self.data.num_rows

    def where(self, i: int) -> str:
        """Data row i (0-based) as the user finds it: 'line N' of a CSV file, 'row N' (1-based) of a parquet one."""
        return f"line {self.lines([i])[0]}" if self.encoding else f"row {i + 1}"

    def lines(self, rows) -> list[int]:
        """The file lines on which the given data rows start. Python's csv module walks the file up to the last one
        (only ever to word an error): it counts blank lines, which pyarrow skips, and line breaks in quoted values."""
        want, out = set(rows), {}
        for k, (start, _) in enumerate(_rows(self.path, self.encoding), start=-1):  # k: the data row; -1 the header
            if k in want:
                out[k] = start
                if len(out) == len(want):
                    break
        return [out.get(r, 0) for r in rows]

    def column(self, name, what: str) -> pa.ChunkedArray:
        i = self.data.schema.get_field_index(name) if isinstance(name, str) else -1  # names are unique (read_table)
        if i < 0:
            raise DataError(
                f"{self.path} has no column {quote(name)} ({what}); its columns: {self.data.column_names[:12]}"
            )
        return self.data.column(i)

    def text(self, name, what: str) -> pa.ChunkedArray:
        """A column of ids, labels or splits as text; an empty cell (a parquet null) as ''. Parquet numbers become
        their digits (a float column of whole numbers, as pandas writes integers with gaps, its integers)."""
        import pyarrow.compute as pc

        col = self.column(name, what)
        t = col.type
        if pa.types.is_dictionary(t):
            col, t = col.cast(t.value_type), t.value_type
        if pa.types.is_floating(t):
            col = pc.if_else(pc.is_nan(col), pa.scalar(None, t), col)  # NaN: an empty cell, as pandas writes one
            v = pc.drop_null(col).to_numpy()
            whole = v % 1 == 0
            if (whole & (abs(v) >= 2**53)).any():  # past 2^53 a float need not be the integer that was written
                i = int(np.flatnonzero(whole & (abs(v) >= 2**53))[0])
                raise DataError(
                    f"{self.path}: column {quote(name)} ({what}) holds the float {float(v[i])!r}, past 2^53, where a "
                    "float cannot tell one integer from the next; write the column as integers or as text"
                )
            if whole.all():
                col, t = col.cast(pa.int64()), pa.int64()
        if not any(f(t) for f in (pa.types.is_string, pa.types.is_large_string, pa.types.is_integer)):
            if not (pa.types.is_floating(t) or pa.types.is_boolean(t)):
                raise DataError(f"{self.path}: column {quote(name)} ({what}) holds {t}; it must hold text or integers")
        return pc.fill_null(col.cast(pa.string()), "")


def _rows(path: Path, encoding: str):
    """(the line on which it starts, its fields) for every non-blank row of a CSV file, the header first."""
    limit = csv.field_size_limit()
    csv.field_size_limit(2**31 - 1)  # a long value is no reason not to find a line
    last = 0
    try:
        with io.TextIOWrapper(open(path, "rb"), encoding=encoding, newline="") as f:
            reader = csv.reader(f)
            for fields in reader:
                start, last = last + 1, reader.line_num
                if fields:  # a blank line is no row (pyarrow skips it too)
                    yield start, fields
    except csv.Error as e:
        raise DataError(f"{path}: line {last + 1} cannot be read as CSV ({e}); {DOC}") from None
    finally:
        csv.field_size_limit(limit)


def first(mask) -> int | None:
    """The position of the first true value of a boolean (chunked) array, or None."""
    import numpy as np

    hit = np.flatnonzero(np.asarray(mask.to_numpy(zero_copy_only=False), dtype=bool))
    return int(hit[0]) if len(hit) else None


def _decode_error(path: Path, data: bytes, encoding: str, e: UnicodeDecodeError) -> DataError:
    before = data[: e.start].decode(encoding, errors="replace")
    line = before.count("\n") + before.count("\r") - before.count("\r\n") + 1
    return DataError(
        f"{path}: line {line} is not {encoding.upper().replace('-SIG', '')} text (byte {e.object[e.start]:#04x}); "
        f"{SAVE_AS}"
    )


def _encoding(path: Path) -> str:
    with open(path, "rb") as f:
        head = f.read(1 << 16)
    for bom, encoding in BOMS:
        if head.startswith(bom):
            return encoding
    if b"\x00" in head:
        raise DataError(
            f"{path} holds NUL bytes: it is not UTF-8 text (UTF-16 without its byte-order mark?); {SAVE_AS}"
        )
    return "utf-8-sig"


def _header(path: Path, encoding: str) -> list[str]:
    """The column names: the first non-blank row."""
    try:
        names = next((fields for _, fields in _rows(path, encoding)), None)
    except UnicodeDecodeError:
        data = path.read_bytes()
        try:
            data.decode(encoding)
        except UnicodeDecodeError as e:
            raise _decode_error(path, data, encoding, e) from None
        raise
    if names is None:
        raise DataError(f"{path} is empty: a table starts with a header line naming its columns; {DOC}")
    return names


def _duplicates(path: Path, names: list[str]) -> None:
    from collections import Counter

    twice = sorted(n for n, k in Counter(names).items() if k > 1)
    if twice:
        many = len(twice) > 1
        raise DataError(
            f"{path}: column name{'s' * many} {', '.join(map(quote, twice))} appear{'s' * (not many)} more than once; "
            "every column needs its own name"
        )


def _csv_failure(table: Table, names: list[str], e: Exception) -> DataError:
    """pyarrow's parse error, located by Python's csv module: the first row of another width, or a bad byte."""
    msg = str(e).splitlines()[0]
    if "UTF8" in msg or "UTF-8" in msg:
        data = table.path.read_bytes()
        try:
            data.decode(table.encoding)
        except UnicodeDecodeError as err:
            return _decode_error(table.path, data, table.encoding, err)
    for start, fields in _rows(table.path, table.encoding):
        if len(fields) != len(names):
            return DataError(
                f"{table.path}: line {start} has {len(fields)} field{'s' * (len(fields) != 1)} but the header names "
                f"{len(names)} columns; "
                "every row needs one value per column (quote values that hold a comma)"
            )
    return DataError(f"{table.path} cannot be read as a CSV table ({msg[:200]}); {DOC}")


def _read_csv(path: Path) -> Table:
    from pyarrow import csv as pcsv

    encoding = _encoding(path)
    names = _header(path, encoding)
    _duplicates(path, names)
    table = Table(path, pa.table({n: pa.array([], pa.string()) for n in names}), encoding)
    source = str(path)
    if encoding in ("utf-16", "utf-32"):
        raw = path.read_bytes()
        try:
            source = pa.BufferReader(raw.decode(encoding).encode("utf-8"))
        except UnicodeDecodeError as e:
            raise _decode_error(path, raw, encoding, e) from None
    try:
        table.data = pcsv.read_csv(
            source,
            parse_options=pcsv.ParseOptions(newlines_in_values=True),
            convert_options=pcsv.ConvertOptions(
                column_types={n: pa.string() for n in names},
                strings_can_be_null=False,
                quoted_strings_can_be_null=False,
            ),
        )
    except pa.ArrowInvalid as e:
        if "cannot infer number of columns" not in str(e):  # pyarrow's word for a header without a line break
            raise _csv_failure(table, names, e) from None
    if table.data.column_names != names or any(t != pa.string() for t in table.data.schema.types):
        raise DataError(f"{path}: the header line {names[:12]} cannot be read as column names; {DOC}")
    return table


def _read_parquet(path: Path) -> Table:
    import pyarrow.parquet as pq

    try:
        _duplicates(path, pq.read_schema(path).names)  # before reading: pyarrow cannot tell such columns apart
        return Table(path, pq.read_table(path))
    except (pa.ArrowException, OSError) as e:
        raise DataError(f"{path} cannot be read as a parquet table ({str(e).splitlines()[0][:200]}); {DOC}") from None


def _repeated_header(table: Table) -> None:
    """A row equal to the header, column by column (tables joined with their headers), is refused."""
    import numpy as np
    import pyarrow.compute as pc

    names, data = table.data.column_names, table.data
    if not names or not len(table) or not all(pa.types.is_string(t) for t in data.schema.types):
        return
    rows = np.flatnonzero(pc.equal(data[names[0]], names[0]).to_numpy(zero_copy_only=False))
    if not len(rows):
        return
    few = data.take(pa.array(rows))
    hit = np.ones(len(rows), dtype=bool)
    for n in names[1:]:
        hit &= pc.equal(few[n], n).to_numpy(zero_copy_only=False)
    if hit.any():
        raise DataError(
            f"{table.path}: {table.where(int(rows[hit][0]))} repeats the header ({quote(','.join(names))}); a table "
            "has one header line: remove the repeat (were tables joined with their headers?)"
        )


def _stray_byte_order_mark(table: Table) -> None:
    """A byte-order mark starting a row (two exports joined with `cat`, each with its own) is refused: read as
    text it would make an id of its own, or hide a repeated header."""
    import numpy as np
    import pyarrow.compute as pc

    names, data = table.data.column_names, table.data
    if not names or not len(table) or not pa.types.is_string(data.schema.types[0]):
        return
    rows = np.flatnonzero(pc.starts_with(data[names[0]], "\ufeff").fill_null(False).to_numpy(zero_copy_only=False))
    if len(rows):
        raise DataError(
            f"{table.path}: {table.where(int(rows[0]))} starts with a byte-order mark (U+FEFF), which only a file's "
            "first line may carry: were files joined? remove it (and any header repeated with it)"
        )


def read_table(path: Path) -> Table:
    """A CSV or parquet file as a Table (module docstring); anything else refused in one line naming the file."""
    if not path.is_file():
        raise DataError(f"{path} {'is a folder, not a file' if path.is_dir() else 'does not exist'}; {DOC}")
    size, t0 = path.stat().st_size, time.perf_counter()
    if size >= LOUD_BYTES:
        log.info("data: reading %s (%.0f MB)", path, size / 2**20)
    table = _read_parquet(path) if path.suffix.lower() in PARQUET else _read_csv(path)
    if size >= LOUD_BYTES:
        log.info("data: read %s: %d rows (%.1fs)", path.name, len(table), time.perf_counter() - t0)
    _stray_byte_order_mark(table)
    _repeated_header(table)
    return table
