//! Who sends the series: `Name <email>`, refused when nobody could answer it.
//!
//! A review on libc-alpha is a reply to the sender, and the `Signed-off-by` line certifies the
//! Developer's Certificate of Origin under a name someone can be reached at. So besides what a
//! mail header cannot hold, an address is refused when it cannot receive mail from the list's
//! readers, each kind with the rule it breaks: the series' placeholder, the domains RFC 2606
//! reserves (for examples, and the top-level domains no mail reaches), hosts that only this
//! machine or its network knows, and a domain without a dot. A name outside ASCII is a real
//! name like any other; the mails encode it as `git format-patch` does
//! ([`crate::series::mail::header_name`]).

use anyhow::{anyhow, bail, Context, Result};

/// The placeholder author the series in `patches/` carry.
const PLACEHOLDER: &str = "ld-fallback@example.invalid";

/// RFC 2606: the second-level domains reserved for examples in documentation (section 3) and
/// the top-level domain `example` (section 2), with their subdomains.
const EXAMPLE_DOMAINS: &[&str] = &["example.com", "example.net", "example.org", "example"];

/// RFC 2606, section 2: top-level domains that no mail reaches (`localhost` is a host, below).
const RESERVED_TOP_LEVEL: &[&str] = &["test", "invalid"];

/// Names only this machine or its local network resolves: `localhost` (RFC 6761), the
/// `localdomain` of many /etc/hosts files, mDNS's `local` (RFC 6762), `home.arpa` (RFC 8375)
/// and `internal`, reserved for private use.
const LOCAL_ONLY: &[&str] = &["localhost", "localdomain", "local", "home.arpa", "internal"];

/// A sender: `Name <email>`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Author {
    pub name: String,
    pub email: String,
}

impl Author {
    pub fn parse(text: &str) -> Result<Author> {
        // Quoted as Rust quotes strings: a newline in it must not break the error's one line.
        let not = |why: &str| anyhow!("{text:?} is not `Name <email>`{why}");
        let Some((name, email)) = text
            .trim()
            .strip_suffix('>')
            .and_then(|t| t.split_once(" <"))
        else {
            return Err(not(""));
        };
        let author = Author {
            name: name.trim().to_string(),
            email: email.trim().to_string(),
        };
        if author.name.is_empty() || !author.email.contains('@') {
            return Err(not(""));
        }
        // What a mail header and libgit2's signature cannot hold: a line break or another
        // control character anywhere, an angle bracket in the name, a space in the address.
        if text.trim().chars().any(char::is_control)
            || author.name.contains(['<', '>'])
            || author.email.contains(['<', '>', ' '])
        {
            return Err(not(
                ": the name and the address must be one line, without control characters, the name without `<` or `>`, the address without spaces",
            ));
        }
        check_reachable(&author.email)?;
        Ok(author)
    }

    /// The author git would write, in git's order (git-commit-tree(1), "Commit Information";
    /// git-config(1), `user.name`): `$GIT_AUTHOR_NAME` and `$GIT_AUTHOR_EMAIL`, else
    /// `author.name` and `author.email`, else `user.name` and `user.email`, else (the address)
    /// `$EMAIL`.
    pub(crate) fn from_git_config() -> Result<Author> {
        let config =
            crate::util::git::user_configuration().context("cannot read git's configuration")?;
        let env = |name: &str| std::env::var(name).ok().filter(|v| !v.is_empty());
        let get = |key: &str| config.get_string(key).ok();
        let name = env("GIT_AUTHOR_NAME")
            .or_else(|| get("author.name"))
            .or_else(|| get("user.name"));
        let email = env("GIT_AUTHOR_EMAIL")
            .or_else(|| get("author.email"))
            .or_else(|| get("user.email"))
            .or_else(|| env("EMAIL"));
        match (name, email) {
            (Some(name), Some(email)) => Author::parse(&format!("{name} <{email}>")),
            _ => bail!(
                "who sends the series? pass --author 'Name <email>', or set git's user.name and user.email (or $GIT_AUTHOR_NAME and $GIT_AUTHOR_EMAIL); the series' own author ({PLACEHOLDER}) cannot be sent"
            ),
        }
    }

    pub(crate) fn sign_off(&self) -> String {
        format!("Signed-off-by: {} <{}>", self.name, self.email)
    }
}

/// Refuses an address that the list's readers could not reply to, naming the rule.
fn check_reachable(email: &str) -> Result<()> {
    let (_, domain) = email.rsplit_once('@').unwrap_or(("", email));
    // DNS names are case-insensitive, and a final dot only says the name is complete.
    let domain = domain.to_ascii_lowercase();
    let domain = domain.strip_suffix('.').unwrap_or(&domain);
    let within = |zone: &str| domain == zone || domain.ends_with(&format!(".{zone}"));
    if email.eq_ignore_ascii_case(PLACEHOLDER) {
        bail!("`{email}` is the series' placeholder author, which cannot be sent: pass --author 'Name <email>' with your own address");
    }
    if let Some(zone) = EXAMPLE_DOMAINS.iter().find(|zone| within(zone)) {
        bail!("`{email}` is in {zone}, a domain reserved for examples in documentation (RFC 2606): mail to it reaches no one; pass your own address");
    }
    if let Some(zone) = RESERVED_TOP_LEVEL.iter().find(|zone| within(zone)) {
        bail!("`{email}` is in .{zone}, a top-level domain reserved by RFC 2606 that no mail reaches: pass your own address");
    }
    if domain.starts_with('[') || LOCAL_ONLY.iter().any(|zone| within(zone)) {
        bail!("`{email}` names a host only this machine or its local network knows: libc-alpha's readers cannot reply to it; pass an address on a public mail domain");
    }
    if !domain.contains('.') {
        bail!("`{email}` has no dot in its domain `{domain}`: that is a local name, not an address on the Internet; pass the full address (name@domain.tld)");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn placeholders_and_malformed_authors_are_refused() {
        assert!(Author::parse("A Person <a@gnu.org>").is_ok());
        assert!(Author::parse("ld-fallback developers <ld-fallback@example.invalid>").is_err());
        assert!(Author::parse("no address").is_err());
        assert!(Author::parse("<a@b>").is_err());
    }

    /// Each kind of address nobody can answer is refused with the rule it breaks.
    #[test]
    fn addresses_no_one_can_reply_to_are_refused_each_with_its_rule() {
        let refused = |text: &str| format!("{:#}", Author::parse(text).unwrap_err());
        assert_eq!(
            refused("ld-fallback developers <ld-fallback@example.invalid>"),
            "`ld-fallback@example.invalid` is the series' placeholder author, which cannot be sent: pass --author 'Name <email>' with your own address"
        );
        for (address, domain) in [
            ("x@example.com", "example.com"),
            ("x@example.org", "example.org"),
            ("x@mail.example.net", "example.net"),
            ("x@docs.example", "example"),
        ] {
            assert_eq!(
                refused(&format!("X <{address}>")),
                format!("`{address}` is in {domain}, a domain reserved for examples in documentation (RFC 2606): mail to it reaches no one; pass your own address")
            );
        }
        for (address, domain) in [("x@foo.test", "test"), ("x@a.b.invalid", "invalid")] {
            assert_eq!(
                refused(&format!("X <{address}>")),
                format!("`{address}` is in .{domain}, a top-level domain reserved by RFC 2606 that no mail reaches: pass your own address")
            );
        }
        for address in [
            "root@localhost",
            "me@box.localdomain",
            "me@printer.local",
            "me@router.home.arpa",
            "me@[127.0.0.1]",
        ] {
            assert_eq!(
                refused(&format!("X <{address}>")),
                format!("`{address}` names a host only this machine or its local network knows: libc-alpha's readers cannot reply to it; pass an address on a public mail domain")
            );
        }
        assert_eq!(
            refused("X <x@y>"),
            "`x@y` has no dot in its domain `y`: that is a local name, not an address on the Internet; pass the full address (name@domain.tld)"
        );
    }

    #[test]
    fn a_name_outside_ascii_is_accepted_as_written() {
        assert_eq!(
            Author::parse("José Müller <jose@gnu.org>").unwrap(),
            Author {
                name: "José Müller".into(),
                email: "jose@gnu.org".into()
            }
        );
    }

    #[test]
    fn an_author_with_a_newline_is_refused_by_name_not_by_libgit2() {
        for text in [
            "A\nB <a@gnu.org>",
            "A B <a@gn\nu.org>",
            "A\tB <a@gnu.org>",
            "A <B <a@gnu.org>",
            "A B <a b@gnu.org>",
        ] {
            let err = format!("{:#}", Author::parse(text).unwrap_err());
            assert!(err.contains("is not `Name <email>`"), "{text:?}: {err}");
            assert!(
                !err.contains('\n'),
                "{text:?}: the message is one line: {err}"
            );
        }
    }
}
