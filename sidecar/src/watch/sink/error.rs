//! Why a sink did not take its part of the output: a failure that may pass (retried), or a table
//! too large for the sink (refused there, and not retried until the table changes).

use std::fmt;

/// Why a sink did not take a table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PushError {
    /// A failure that may pass (a file system error, the API server unreachable): retried.
    Failed(String),
    /// The table can never fit this sink: refused there, and not retried until the table changes.
    TooLarge(TooLarge),
}

/// A table too large for a sink: the size of what would be sent, and the sink's limit.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TooLarge {
    /// The serialized object's size, in bytes.
    pub bytes: usize,
    /// The sink's limit (`--istio-max-bytes`), in bytes.
    pub limit: usize,
    /// The API server's answer, when it was the one that refused (the object was under `limit`).
    pub answer: Option<String>,
}

impl fmt::Display for TooLarge {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (bytes, limit) = (self.bytes, self.limit);
        match &self.answer {
            None => write!(f, "table too large: the object is {bytes} bytes, over this sink's limit of {limit} bytes (--istio-max-bytes)")?,
            Some(answer) => write!(f, "table too large: the API server refused the object of {bytes} bytes ({answer}), though under --istio-max-bytes {limit}: lower it")?,
        }
        write!(
            f,
            "; not retried until the table changes, the last good table stays there. Route fewer rules \
             through this sink, or use --ecds-file"
        )
    }
}

impl fmt::Display for PushError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PushError::Failed(e) => f.write_str(e),
            PushError::TooLarge(too_large) => too_large.fmt(f),
        }
    }
}

impl From<String> for PushError {
    fn from(e: String) -> PushError {
        PushError::Failed(e)
    }
}
