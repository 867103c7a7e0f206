"""`python -m minijax.launch -n N script.py [args...]` (see `minijax.launch`)."""
import sys

from minijax.launch import main

sys.exit(main())
