"""python -m regnn.tuning <sweep> [--out PREFIX]: the listing of a tune (regnn.tuning.report)."""

from regnn.tuning.report import main

raise SystemExit(main())
