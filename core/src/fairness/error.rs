//! What can go wrong in the fair deal: a reveal document (or the checker's expectations)
//! that breaks its grammar, a reveal whose rules are not valid rules, the operating
//! system's random source failing. Commitment binding and expiry have their own
//! [`super::commitment::BindingError`]. No protocol status codes, no request field paths;
//! no seed or face-down card in any message.

use crate::game::GameError;

/// An error of the fairness layer.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FairnessError {
    /// A reveal or expectation document breaks the grammar at `path` (a JSON path inside
    /// the document, such as `seats[1].bet`, or the name of a checker option).
    #[error("{path}: {reason}")]
    Malformed { path: String, reason: String },

    /// The reveal states a table the rules refuse (deck count, limits, paytable).
    #[error(transparent)]
    Game(#[from] GameError),

    /// The operating system's random source failed: no seed can be drawn.
    #[error("the operating system random source failed")]
    RandomSource(#[source] rand::rngs::SysError),
}

impl FairnessError {
    pub(crate) fn malformed(path: impl Into<String>, reason: impl Into<String>) -> FairnessError {
        FairnessError::Malformed { path: path.into(), reason: reason.into() }
    }

    /// The document path of a grammar error (`None` for other errors).
    pub fn path(&self) -> Option<&str> {
        match self {
            FairnessError::Malformed { path, .. } => Some(path),
            _ => None,
        }
    }
}
