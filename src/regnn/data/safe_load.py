"""User files read without running code: a `.pt` file from elsewhere may hold code that unpickling runs."""

from __future__ import annotations

from pathlib import Path

from regnn.errors import DataError


def torch_load(path: str | Path):
    """torch.load without unpickling code: tensors, dicts, lists and numbers only."""
    import pickle

    from torch.serialization import load  # not torch.load: a library may have replaced it

    try:
        return load(path, map_location="cpu", weights_only=True)
    except pickle.UnpicklingError as e:
        why = str(e).rsplit("WeightsUnpickler error:", 1)[-1].strip().splitlines()[0][:160] if str(e) else ""
        raise DataError(
            f"{path} holds Python objects other than tensors ({why}), which are not loaded because "
            "unpickling them could run code; save plain tensors: torch.save({name: tensor}, path)"
        ) from e
    except (RuntimeError, EOFError, OSError) as e:
        raise DataError(
            f"{path} cannot be read by torch.load ({type(e).__name__}); it is truncated or not a torch.save file"
        ) from e
