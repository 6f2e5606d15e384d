//! How a command ends: its exit status (0 ok, 1 failure, 2 needs attention), and the error
//! that says a finding rather than a failure.

/// Exit status: the command did what was asked and found nothing to act on.
pub(crate) const EXIT_OK: u8 = 0;
/// Exit status: the command failed (bad input, I/O error, refused change, missing tool).
pub(crate) const EXIT_FAILURE: u8 = 1;
/// Exit status: the command worked and found something the user must act on: a rebase
/// stopped at a conflict, a series that does not apply or drifted, a release to import.
pub(crate) const EXIT_NEEDS_ATTENTION: u8 = 2;

/// Declares an error that is a message and nothing else, as a type of its own so that a
/// caller can tell it apart (`is`, `downcast_ref`) from the failures around it.
macro_rules! message_error {
    ($(#[$attr:meta])* $name:ident) => {
        $(#[$attr])*
        #[derive(Debug)]
        pub(crate) struct $name(pub String);

        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(&self.0)
            }
        }

        impl std::error::Error for $name {}
    };
}
pub(crate) use message_error;

message_error! {
    /// An error that is a finding, not a failure: [`EXIT_NEEDS_ATTENTION`]. The message says
    /// what needs attention and what to do.
    NeedsAttention
}

/// The exit status for a command that ended with `err`.
pub(crate) fn exit_status(err: &anyhow::Error) -> u8 {
    if err.chain().any(|cause| cause.is::<NeedsAttention>()) {
        EXIT_NEEDS_ATTENTION
    } else {
        EXIT_FAILURE
    }
}
