//! Terminal output: colour only on a terminal and never with `NO_COLOR`.

use std::io::IsTerminal;

#[derive(Clone, Copy)]
pub struct Style {
    color: bool,
}

impl Style {
    pub fn detect() -> Style {
        let no_color = std::env::var_os("NO_COLOR").is_some_and(|v| !v.is_empty());
        Style { color: !no_color && std::io::stdout().is_terminal() }
    }

    fn paint(&self, code: &str, s: &str) -> String {
        if self.color { format!("\x1b[{code}m{s}\x1b[0m") } else { s.to_string() }
    }

    pub fn ok(&self, s: &str) -> String {
        self.paint("32", s)
    }

    pub fn bad(&self, s: &str) -> String {
        self.paint("31;1", s)
    }

    pub fn warn(&self, s: &str) -> String {
        self.paint("33", s)
    }

    pub fn dim(&self, s: &str) -> String {
        self.paint("2", s)
    }

    /// A unified diff with `+`/`-` lines coloured.
    pub fn diff(&self, diff: &str) -> String {
        if !self.color {
            return diff.to_string();
        }
        diff.split_inclusive('\n')
            .map(|l| {
                if l.starts_with("+++") || l.starts_with("---") {
                    self.paint("1", l)
                } else if l.starts_with('+') {
                    self.paint("32", l)
                } else if l.starts_with('-') {
                    self.paint("31", l)
                } else if l.starts_with("@@") {
                    self.paint("36", l)
                } else {
                    l.to_string()
                }
            })
            .collect()
    }
}
