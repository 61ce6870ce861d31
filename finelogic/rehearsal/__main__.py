"""``python -m finelogic.rehearsal <root> [MODEL=IN/OUT ...]``: a rehearsal's report as Markdown tables."""
import sys

from finelogic.rehearsal.rehearse import parse_price, render

print(render(sys.argv[1], dict(parse_price(p) for p in sys.argv[2:])))
