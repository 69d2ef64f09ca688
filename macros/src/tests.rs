//! Parser and validator tests on token streams, outside a compiler run.
