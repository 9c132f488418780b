"""The ``commerce.return_refund`` domain pack."""
