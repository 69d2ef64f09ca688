//! Annotated model code on real data.
