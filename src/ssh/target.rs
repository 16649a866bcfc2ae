//! The machines boxes are mapped to: `NAME=[USER@]HOST[:PORT]`, parsed and checked, and the box
//! names a card uses.

use crate::fatal::{fatal, Fatal};
use rigaudit_audit::records::Card;

/// A machine a box is mapped to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Target {
    /// The card's box name.
    pub box_name: String,
    /// The login name, if given.
    pub user: Option<String>,
    /// A host name or address (an IPv6 address without brackets).
    pub host: String,
    /// The port, if given.
    pub port: Option<u16>,
}

impl std::fmt::Display for Target {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if let Some(u) = &self.user {
            write!(f, "{u}@")?;
        }
        if self.host.contains(':') {
            write!(f, "[{}]", self.host)?;
        } else {
            write!(f, "{}", self.host)?;
        }
        if let Some(p) = self.port {
            write!(f, ":{p}")?;
        }
        Ok(())
    }
}

fn plain_name(s: &str, extra: &[char]) -> bool {
    !s.is_empty()
        && !s.starts_with('-')
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || extra.contains(&c))
}

/// Parses `NAME=[USER@]HOST[:PORT]` (an IPv6 host in brackets: `[::1]:22`).
pub fn parse_box(spec: &str) -> Result<Target, Fatal> {
    let bad = |why: &str| fatal(format!("--box {}: {why}", crate::input::shown(spec)));
    let (name, dest) = spec
        .split_once('=')
        .ok_or_else(|| bad("expected NAME=[USER@]HOST[:PORT]"))?;
    parse_target(name, dest).map_err(|why| bad(&why))
}

/// Box `name` at `[USER@]HOST[:PORT]`; `Err` says what is wrong.
pub fn parse_target(name: &str, dest: &str) -> Result<Target, String> {
    if name.is_empty() {
        return Err("the box name is empty".into());
    }
    let (user, hostport) = match dest.rsplit_once('@') {
        Some((u, h)) => (Some(u.to_string()), h),
        None => (None, dest),
    };
    if user
        .as_deref()
        .is_some_and(|u| !plain_name(u, &['.', '_', '-']))
    {
        return Err("the user name must be letters, digits, '.', '_' or '-'".into());
    }
    let (host, port) = split_port(hostport)?;
    let ok_host = if host.contains(':') {
        host.chars()
            .all(|c| c.is_ascii_hexdigit() || c == ':' || c == '.')
    } else {
        plain_name(&host, &['.', '_', '-'])
    };
    if !ok_host {
        return Err("the host must be a name or an address".into());
    }
    Ok(Target {
        box_name: name.to_string(),
        user,
        host,
        port,
    })
}

fn split_port(s: &str) -> Result<(String, Option<u16>), String> {
    let port = |p: &str| {
        p.parse::<u16>()
            .ok()
            .filter(|&p| p > 0)
            .ok_or_else(|| format!("{p:?} is not a port"))
    };
    if let Some(rest) = s.strip_prefix('[') {
        let (h, after) = rest.split_once(']').ok_or("an unclosed '['")?;
        return match after.strip_prefix(':') {
            Some(p) => Ok((h.to_string(), Some(port(p)?))),
            None if after.is_empty() => Ok((h.to_string(), None)),
            None => Err(format!("unexpected {after:?} after the address")),
        };
    }
    match s.split_once(':') {
        Some((h, p)) if !p.contains(':') => Ok((h.to_string(), Some(port(p)?))),
        Some(_) => Err("an IPv6 address must be in brackets: [::1]:22".into()),
        None => Ok((s.to_string(), None)),
    }
}

/// Every box name the card uses.
pub fn card_boxes(card: &Card) -> Vec<String> {
    let mut names: Vec<String> = card.hardware.boxes.iter().map(|b| b.name.clone()).collect();
    for c in &card.commands {
        if let Some(b) = &c.box_name {
            if !names.contains(b) {
                names.push(b.clone());
            }
        }
    }
    names
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn box_specs() {
        let t = parse_box("pgx=auditor@spark-b:2222").unwrap();
        assert_eq!(
            (
                t.box_name.as_str(),
                t.user.as_deref(),
                t.host.as_str(),
                t.port
            ),
            ("pgx", Some("auditor"), "spark-b", Some(2222))
        );
        assert_eq!(t.to_string(), "auditor@spark-b:2222");
        let t = parse_box("a=[::1]:22").unwrap();
        assert_eq!((t.host.as_str(), t.port), ("::1", Some(22)));
        assert_eq!(t.to_string(), "[::1]:22");
        let t = parse_box("a=10.0.0.2").unwrap();
        assert_eq!((t.user, t.port), (None, None));
        for bad in [
            "nobox",
            "=h",
            "a=-oProxyCommand=x",
            "a=u@-h",
            "a=-u@h",
            "a=h:0",
            "a=h:x",
            "a=::1",
            "a=h;id",
            "a=h b",
        ] {
            assert!(parse_box(bad).is_err(), "{bad}");
        }
    }
}
