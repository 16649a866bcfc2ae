//! Words for a POSIX shell: [`quote`], the one function that quotes, and the command line made of
//! quoted words only.

/// Quotes one word for a POSIX shell: always single-quoted, each `'` as `'\''`. The result, read
/// by `sh`, is exactly `word` (any byte but NUL, which no argument can hold; see [`command_line`]).
pub fn quote(word: &str) -> String {
    let mut q = String::with_capacity(word.len() + 2);
    q.push('\'');
    for c in word.chars() {
        if c == '\'' {
            q.push_str("'\\''");
        } else {
            q.push(c);
        }
    }
    q.push('\'');
    q
}

/// The command string for the box's login shell: `exec` and every word quoted. An item holding
/// a NUL byte is refused (no argument can carry one).
pub fn command_line<S: AsRef<str>>(words: &[S]) -> Result<String, String> {
    let mut line = String::from("exec");
    for (i, w) in words.iter().enumerate() {
        let w = w.as_ref();
        if w.contains('\0') {
            return Err(format!(
                "item {i} ({}) holds a NUL byte",
                crate::input::shown(w)
            ));
        }
        line.push(' ');
        line.push_str(&quote(w));
    }
    Ok(line)
}

/// Whether `name` can be exported by a POSIX shell: a letter or `_`, then letters, digits, `_`.
pub fn env_name_ok(name: &str) -> bool {
    name.chars()
        .next()
        .is_some_and(|c| c == '_' || c.is_ascii_alphabetic())
        && name.chars().all(|c| c == '_' || c.is_ascii_alphanumeric())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::process::Command;

    /// What `sh` makes of `line` (after `exec`): the words, each printed NUL-terminated.
    fn through_shell(shell: &str, words: &[String]) -> Vec<String> {
        // A first word of our own: printf with no word still prints the format once.
        let mut all = vec![
            "/usr/bin/printf".to_string(),
            "%s\\0".to_string(),
            "start".to_string(),
        ];
        all.extend(words.iter().cloned());
        let line = command_line(&all).unwrap();
        let out = Command::new(shell).arg("-c").arg(&line).output().unwrap();
        assert!(out.status.success(), "{shell}: {line:?}: {out:?}");
        let s = String::from_utf8(out.stdout).unwrap();
        let mut v: Vec<String> = s.split('\0').map(String::from).collect();
        assert_eq!(v.pop().as_deref(), Some(""));
        assert_eq!(v.remove(0), "start");
        v
    }

    fn shells() -> Vec<&'static str> {
        ["/bin/sh", "/bin/dash", "/bin/bash", "/bin/zsh", "/bin/ksh"]
            .into_iter()
            .filter(|s| std::path::Path::new(s).exists())
            .collect()
    }

    #[test]
    fn quote_examples() {
        assert_eq!(quote(""), "''");
        assert_eq!(quote("a b"), "'a b'");
        assert_eq!(quote("it's"), r"'it'\''s'");
        assert_eq!(quote("'"), r"''\'''");
        assert_eq!(quote("$(id)"), "'$(id)'");
        assert_eq!(
            command_line(&["x", "a;b"]).unwrap(),
            "exec 'x' 'a;b'".to_string()
        );
        assert!(command_line(&["a\0b"]).unwrap_err().contains("NUL"));
    }

    #[test]
    fn quote_nasty_words_arrive_verbatim_in_every_shell() {
        let dir = tempfile::tempdir().unwrap();
        let marker = dir.path().join("ran");
        let words: Vec<String> = [
            "plain",
            "",
            "a b  c",
            "it's",
            "''",
            "\"double\"",
            &format!("$(touch {})", marker.display()),
            &format!("`touch {}`", marker.display()),
            &format!("a;touch {}", marker.display()),
            "a && b || c | d & e",
            "line1\nline2\n",
            "tab\there",
            "back\\slash\\",
            "$HOME ${PATH} $0 $@ $*",
            "*",
            "~",
            "~root",
            "=ls",
            "!!",
            "#comment",
            "-c",
            "--",
            "ünïcødé ✓ 日本",
            "\u{1b}[31mred",
            "{a,b}",
            "a=b",
            "\r\n",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        for shell in shells() {
            assert_eq!(through_shell(shell, &words), words, "{shell}");
        }
        assert!(!marker.exists(), "a quoted word ran");
    }

    /// A small seeded generator (xorshift), so a failing case can be replayed.
    struct Rng(u64);
    impl Rng {
        fn next(&mut self) -> u64 {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            self.0
        }
    }

    #[test]
    fn quote_random_words_round_trip() {
        const ALPHABET: &[&str] = &[
            "'", "\"", "\\", "$", "(", ")", "`", ";", "&", "|", "<", ">", " ", "\t", "\n", "*",
            "?", "[", "]", "{", "}", "~", "#", "!", "=", "%", "a", "Z", "0", "-", "é", "✓",
            "\u{7f}", "\u{1}", "'\\''",
        ];
        let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
        for shell in shells() {
            for _ in 0..40 {
                let words: Vec<String> = (0..rng.next() % 6)
                    .map(|_| {
                        (0..rng.next() % 12)
                            .map(|_| ALPHABET[(rng.next() % ALPHABET.len() as u64) as usize])
                            .collect()
                    })
                    .collect();
                assert_eq!(through_shell(shell, &words), words, "{shell}");
            }
        }
    }

    #[test]
    fn exportable_names() {
        assert!(env_name_ok("NCCL_IB_HCA") && env_name_ok("_x1"));
        assert!(
            !env_name_ok("1A") && !env_name_ok("A-B") && !env_name_ok("") && !env_name_ok("-i")
        );
    }
}
