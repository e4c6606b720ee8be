//! The host side: `gavel push`.
