"""Share links: the store of shared runs and the handlers that make and open them."""
