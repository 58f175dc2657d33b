"""``python -m agents.hosting CMD_FD EVENT_FD``: a worker process serving live runs (:func:`agents.hosting.worker.main`)."""

import sys

from agents.hosting.worker import main

main(sys.argv[1:])
