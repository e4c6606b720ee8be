//! The central side: verify every inbox batch and accept or refuse it.
