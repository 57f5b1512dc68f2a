"""python -m regnn.tuning <sweep> [--out PREFIX]: the listing of a tune (regnn.tuning.listing)."""
from regnn.tuning.listing import main

raise SystemExit(main())
