"""The ``toolgrammar`` world kind: three business worlds behind one tool grammar."""
