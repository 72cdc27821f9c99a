//! Where a PostgreSQL store is and how to log in to it.
//!
//! A store is named by a URL, `postgres://USER[:PASSWORD]@HOST[:PORT]/DB`
//! (or `postgresql://`). What the URL
//! leaves out comes from libpq's environment: `PGUSER`, `PGHOST`, `PGPORT`,
//! `PGDATABASE`, and a password from `PGPASSWORD` or the password file
//! (`PGPASSFILE`, else `~/.pgpass`). The password is never shown: the store
//! is named everywhere by [`PgTarget::display`], which leaves it out.
//!
//! Every connection has timeouts (see docs/store.md, "Timeouts"): the
//! connect ([`DEFAULT_CONNECT_TIMEOUT`]), each statement on the server
//! (`statement_timeout`, [`DEFAULT_STATEMENT_TIMEOUT`]), each call on the
//! client (the statement's timeout plus [`DEADLINE_MARGIN`]: a server that
//! stopped answering does not enforce its own timeout), a transaction left
//! idle (`idle_in_transaction_session_timeout`), and TCP keepalives and
//! `TCP_USER_TIMEOUT` for a peer that vanished. The URL's own
//! `connect_timeout`, `keepalives*`, `tcp_user_timeout` and `options=-c
//! statement_timeout=…` take precedence.
//!
//! TLS is not built in: `sslmode=require` is refused with one line, and a
//! server that demands TLS refuses the connection; use a local socket, an
//! SSH tunnel or a trusted network.

use std::path::PathBuf;
use std::str::FromStr;
use std::time::Duration;

use postgres::error::SqlState;
use tokio_postgres::config::Host;
use tokio_postgres::Config;

use crate::db_error::DbResult;
use crate::pg_client::PgClient;

/// Whether a store name is a PostgreSQL URL rather than a file path.
pub fn is_postgres_url(name: &str) -> bool {
    name.starts_with("postgres://") || name.starts_with("postgresql://")
}

/// `text` with the password of every PostgreSQL URL in it (and any
/// `password=` setting) replaced by `***`: for command lines, notes and
/// messages, which are stored and shown. A URL ends at white space; see
/// [`redact_arg`] for one argument of a command line.
pub fn redact(text: &str) -> String {
    redact_urls(text, false)
}

/// [`redact`] for one argument of a command line, where a URL runs to the
/// end of the argument, white space included (a quoted password may hold
/// a space).
pub fn redact_arg(arg: &str) -> String {
    redact_urls(arg, true)
}

/// A command line as a run records it: every argument through
/// [`redact_arg`] (runs are shown and copied to shared stores; credentials
/// must not travel with them), arguments that are not UTF-8 made lossy.
pub fn redact_args(args: impl Iterator<Item = std::ffi::OsString>) -> Vec<String> {
    args.map(|a| redact_arg(&a.to_string_lossy())).collect()
}

/// The PostgreSQL client (`tokio-postgres`' URL parser) reads the
/// credentials from the scheme to the first `@` of the URL, whatever
/// stands between (`/`, `?`, `#` and `:` included), and the password from
/// their first `:`. Redacting by the URL grammar of RFC 3986 instead, which
/// ends the authority at the first `/`, `?` or `#`, left
/// `postgres://u:pa/ss@host/db` whole. The redaction runs to the *last*
/// `@` of the URL: a password with an unencoded `@` (which the client cuts
/// short, taking the rest for the host) is hidden whole too; what it may
/// hide besides is never a secret.
fn redact_urls(text: &str, whole: bool) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(i) = ["postgres://", "postgresql://"]
        .iter()
        .filter_map(|scheme| rest.find(scheme).map(|i| (i, scheme.len())))
        .min()
        .map(|(i, len)| i + len)
    {
        out.push_str(&rest[..i]);
        rest = &rest[i..];
        let end = if whole {
            rest.len()
        } else {
            rest.find(char::is_whitespace).unwrap_or(rest.len())
        };
        let url = &rest[..end];
        match url
            .rfind('@')
            .and_then(|at| Some((at, url[..at].find(':')?)))
        {
            Some((at, colon)) => {
                out.push_str(&url[..colon]);
                out.push_str(":***");
                out.push_str(&url[at..]);
            }
            None => out.push_str(url),
        }
        rest = &rest[end..];
    }
    out.push_str(rest);
    redact_settings(&out)
}

/// `password=VALUE` (a URL's query or libpq's key=value form, where a
/// value in single quotes may hold spaces and `\'`) → `password=***`.
fn redact_settings(text: &str) -> String {
    const KEY: &str = "password=";
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(i) = rest.find(KEY) {
        out.push_str(&rest[..i + KEY.len()]);
        rest = &rest[i + KEY.len()..];
        let end = match rest.strip_prefix('\'') {
            Some(quoted) => quoted_end(quoted).map_or(rest.len(), |e| e + 2),
            None => rest
                .find(|c: char| c == '&' || c.is_whitespace())
                .unwrap_or(rest.len()),
        };
        out.push_str("***");
        rest = &rest[end..];
    }
    out.push_str(rest);
    out
}

/// The index of the quote that closes a libpq single-quoted value (`\`
/// escapes the next character).
fn quoted_end(value: &str) -> Option<usize> {
    let mut escaped = false;
    for (i, c) in value.char_indices() {
        match c {
            _ if escaped => escaped = false,
            '\\' => escaped = true,
            '\'' => return Some(i),
            _ => {}
        }
    }
    None
}

/// A PostgreSQL server, database and user, with the credentials resolved.
#[derive(Clone)]
pub struct PgTarget {
    config: Config,
    display: String,
    deadline: Duration,
}

impl std::fmt::Debug for PgTarget {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.display)
    }
}

/// How long a connect (TCP, startup and authentication) may take.
pub const DEFAULT_CONNECT_TIMEOUT: Duration = Duration::from_secs(5);
/// How long the server lets one statement run (`statement_timeout`).
pub const DEFAULT_STATEMENT_TIMEOUT: Duration = Duration::from_secs(5);
/// How much longer than the statement timeout the client waits for the
/// answer to a call before it closes the connection.
pub const DEADLINE_MARGIN: Duration = Duration::from_secs(1);
/// How long the server keeps a session that left a transaction open and
/// idle (a client that vanished mid-transaction holds its locks until then).
pub const IDLE_IN_TRANSACTION_TIMEOUT: Duration = Duration::from_secs(60);
/// TCP keepalives: first probe after this much silence, then every
/// [`KEEPALIVE_INTERVAL`], the connection dropped after
/// [`KEEPALIVE_RETRIES`] unanswered ones.
pub const KEEPALIVE_IDLE: Duration = Duration::from_secs(30);
pub const KEEPALIVE_INTERVAL: Duration = Duration::from_secs(10);
pub const KEEPALIVE_RETRIES: u32 = 3;
/// Data sent and not acknowledged by the peer's kernel for this long drops
/// the connection (`TCP_USER_TIMEOUT`).
pub const TCP_USER_TIMEOUT: Duration = Duration::from_secs(30);
/// The client's deadline for one call when `statement_timeout` is 0 (off),
/// and for a schema migration (which may take minutes on a large store).
pub(crate) const UNBOUNDED_DEADLINE: Duration = Duration::from_secs(3_600);

impl PgTarget {
    /// Reads a URL; fills in what it leaves out from the environment.
    /// The error is one line and never contains the password.
    pub fn parse(url: &str) -> Result<PgTarget, String> {
        let env = |k: &str| std::env::var(k).ok().filter(|v| !v.is_empty());
        // The client takes the credentials up to the first `@` and the rest
        // for the host: a second `@` (an unencoded one in the password)
        // would show the rest of the password as a host name.
        let before_query = url.split('?').next().unwrap_or(url);
        if before_query.matches('@').count() > 1 {
            return Err(
                "the URL holds more than one '@': write an '@' in the user or password as %40"
                    .to_string(),
            );
        }
        let mut config = Config::from_str(url).map_err(|e| {
            format!(
                "not a valid PostgreSQL URL ({e}); expected postgres://USER@HOST[:PORT]/DATABASE"
            )
        })?;
        if config.get_ssl_mode() == tokio_postgres::config::SslMode::Require {
            return Err(
                "sslmode=require: TLS is not built into latscope; reach the server over a local socket, an SSH tunnel or a trusted network"
                    .to_string(),
            );
        }
        if config.get_hosts().is_empty() {
            config.host(env("PGHOST").unwrap_or_else(|| "localhost".to_string()));
        }
        if let (Some(port), true) = (env("PGPORT"), config.get_ports().is_empty()) {
            let port: u16 = port
                .parse()
                .map_err(|_| format!("PGPORT '{port}' is not a port number"))?;
            config.port(port);
        }
        if config.get_user().is_none() {
            let user = env("PGUSER")
                .or_else(|| env("USER"))
                .unwrap_or_else(|| "postgres".to_string());
            config.user(&user);
        }
        let user = config.get_user().unwrap_or_default().to_string();
        if config.get_dbname().is_none() {
            config.dbname(env("PGDATABASE").unwrap_or_else(|| user.clone()));
        }
        let deadline = apply_timeouts(&mut config);
        if config.get_application_name().is_none() {
            config.application_name("latscope");
        }
        let host = match config.get_hosts().first() {
            Some(Host::Tcp(h)) => h.clone(),
            Some(Host::Unix(p)) => p.display().to_string(),
            None => "localhost".to_string(),
        };
        let port = config.get_ports().first().copied().unwrap_or(5432);
        let dbname = config.get_dbname().unwrap_or_default().to_string();
        if config.get_password().is_none() {
            if let Some(pw) = env("PGPASSWORD") {
                config.password(pw);
            } else if let Some(pw) = password_file()
                .and_then(|f| std::fs::read_to_string(f).ok())
                .and_then(|text| pgpass_lookup(&text, &host, port, &dbname, &user))
            {
                config.password(pw);
            }
        }
        let display = format!("postgres://{user}@{host}:{port}/{dbname}");
        Ok(PgTarget {
            config,
            display,
            deadline,
        })
    }

    /// Opens a connection (with the connect timeout of the URL, 5 s by
    /// default), whose calls each end within the target's deadline.
    pub fn connect(&self) -> DbResult<PgClient> {
        let connect = self
            .config
            .get_connect_timeout()
            .copied()
            .unwrap_or(DEFAULT_CONNECT_TIMEOUT);
        PgClient::connect(&self.config, connect, self.deadline)
    }

    /// The target without its password: how messages name the store.
    pub fn display_path(&self) -> PathBuf {
        PathBuf::from(&self.display)
    }
}

/// Sets every timeout the URL leaves out; returns the client's deadline
/// for one call.
fn apply_timeouts(config: &mut Config) -> Duration {
    if config.get_connect_timeout().is_none() {
        config.connect_timeout(DEFAULT_CONNECT_TIMEOUT);
    }
    if config.get_keepalives() {
        if config.get_keepalives_idle() == Duration::from_secs(2 * 3600) {
            config.keepalives_idle(KEEPALIVE_IDLE);
        }
        if config.get_keepalives_interval().is_none() {
            config.keepalives_interval(KEEPALIVE_INTERVAL);
        }
        if config.get_keepalives_retries().is_none() {
            config.keepalives_retries(KEEPALIVE_RETRIES);
        }
    }
    if config.get_tcp_user_timeout().is_none() {
        config.tcp_user_timeout(TCP_USER_TIMEOUT);
    }
    let user = config.get_options().unwrap_or_default().to_string();
    let statement = match setting_ms(&user, "statement_timeout") {
        Some(ms) => Duration::from_millis(ms),
        None => DEFAULT_STATEMENT_TIMEOUT,
    };
    // The URL's own options come last: where they set the same, theirs
    // wins.
    let ours = format!(
        "-c statement_timeout={} -c idle_in_transaction_session_timeout={}",
        DEFAULT_STATEMENT_TIMEOUT.as_millis(),
        IDLE_IN_TRANSACTION_TIMEOUT.as_millis()
    );
    config.options(&ours);
    if !user.is_empty() {
        config.options(format!("{ours} {user}"));
    }
    if statement.is_zero() {
        UNBOUNDED_DEADLINE
    } else {
        statement + DEADLINE_MARGIN
    }
}

/// The value in milliseconds of a `-c NAME=VALUE` (or `--NAME=VALUE`) in
/// libpq's `options`, where VALUE is a number with an optional unit (`ms`,
/// `s`, `min`, `h`; none is milliseconds, as PostgreSQL reads it).
fn setting_ms(options: &str, name: &str) -> Option<u64> {
    let value = options
        .split_whitespace()
        .filter_map(|w| {
            w.trim_start_matches("--")
                .strip_prefix(name)?
                .strip_prefix('=')
        })
        .next_back()?;
    let digits = value.trim_end_matches(|c: char| c.is_ascii_alphabetic());
    let n: u64 = digits.parse().ok()?;
    let factor = match &value[digits.len()..] {
        "" | "ms" => 1,
        "s" => 1_000,
        "min" => 60_000,
        "h" => 3_600_000,
        _ => return None,
    };
    n.checked_mul(factor)
}

fn password_file() -> Option<PathBuf> {
    if let Some(f) = std::env::var_os("PGPASSFILE") {
        return Some(PathBuf::from(f));
    }
    std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".pgpass"))
}

/// The password of the first matching line of a libpq password file
/// (`host:port:database:user:password`, `*` matching anything, `\` escaping
/// `:` and `\`).
pub fn pgpass_lookup(text: &str, host: &str, port: u16, db: &str, user: &str) -> Option<String> {
    let port = port.to_string();
    for line in text.lines() {
        if line.trim_start().starts_with('#') || line.trim().is_empty() {
            continue;
        }
        let fields = split_pgpass(line);
        if fields.len() != 5 {
            continue;
        }
        let matches = |field: &str, value: &str| field == "*" || field == value;
        let host_ok = matches(&fields[0], host)
            || (fields[0] == "localhost" && (host.starts_with('/') || host == "127.0.0.1"));
        if host_ok
            && matches(&fields[1], &port)
            && matches(&fields[2], db)
            && matches(&fields[3], user)
        {
            return Some(fields[4].clone());
        }
    }
    None
}

fn split_pgpass(line: &str) -> Vec<String> {
    let mut fields = vec![String::new()];
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => {
                if let (Some(n), Some(last)) = (chars.next(), fields.last_mut()) {
                    last.push(n);
                }
            }
            ':' if fields.len() < 5 => fields.push(String::new()),
            _ => {
                if let Some(last) = fields.last_mut() {
                    last.push(c);
                }
            }
        }
    }
    fields
}

pub use crate::db_error::describe;

/// Whether an error means the server could not be reached or went away
/// (as opposed to refusing a statement).
pub fn is_connection_error(e: &postgres::Error) -> bool {
    e.as_db_error().is_none()
        || e.code()
            .is_some_and(|c| c.code().starts_with("08") || *c == SqlState::ADMIN_SHUTDOWN)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pgpass_matches_fields_with_wildcards_and_escapes() {
        let text =
            "# comment\nother:5432:*:*:nope\nlocalhost:55432:db:u\\:x:se\\:cret\n*:*:*:ada:pw2\n";
        assert_eq!(
            pgpass_lookup(text, "127.0.0.1", 55432, "db", "u:x").as_deref(),
            Some("se:cret")
        );
        assert_eq!(
            pgpass_lookup(text, "db.lab", 1, "x", "ada").as_deref(),
            Some("pw2")
        );
        assert_eq!(pgpass_lookup(text, "db.lab", 1, "x", "bob"), None);
    }

    #[test]
    fn the_display_name_leaves_the_password_out() {
        let t = PgTarget::parse("postgres://ada:s3cret@db.lab:6543/fleet").unwrap();
        assert_eq!(
            t.display_path(),
            PathBuf::from("postgres://ada@db.lab:6543/fleet")
        );
        assert!(!format!("{t:?}").contains("s3cret"));
    }

    #[test]
    fn passwords_are_redacted_wherever_they_stand() {
        assert_eq!(
            redact("latscope run --store postgres://ada:s3:cret@db.lab:5432/fleet --for 8s"),
            "latscope run --store postgres://ada:***@db.lab:5432/fleet --for 8s"
        );
        assert_eq!(
            redact("--store=postgresql://ada@db/x?password=s3cret&sslmode=disable"),
            "--store=postgresql://ada@db/x?password=***&sslmode=disable"
        );
        assert_eq!(
            redact("host=db password=s3cret user=ada"),
            "host=db password=*** user=ada"
        );
        assert_eq!(redact("/tmp/latscope.db"), "/tmp/latscope.db");
        assert_eq!(redact("postgres://db.lab/fleet"), "postgres://db.lab/fleet");
    }

    /// A password holding any of the characters the PostgreSQL client reads
    /// into it (it reads up to the `@`) is recorded as `***`, in a
    /// `--store` argument and inside any other one (a command, a note).
    #[test]
    fn a_recorded_command_line_never_holds_a_password() {
        for password in ["Qz/7k", "Qz?7k", "Qz#7k", "Qz 7k", "Qz@7k", "Qz:7k"] {
            let url = format!("postgres://ada:{password}@db.lab:5432/fleet");
            let line = redact_args(
                [
                    "latscope".to_string(),
                    "run".into(),
                    format!("--store={url}"),
                    "--store".into(),
                    url.clone(),
                    format!("exec:psql {url} -c select"),
                ]
                .into_iter()
                .map(std::ffi::OsString::from),
            );
            assert_eq!(line[2], "--store=postgres://ada:***@db.lab:5432/fleet");
            assert_eq!(line[4], "postgres://ada:***@db.lab:5432/fleet");
            assert!(
                line.iter().all(|a| !a.contains("Qz") && !a.contains("7k")),
                "{password:?}: {line:?}"
            );
        }
    }

    /// Every character a password may hold, as the client reads it: the
    /// redacted form keeps none of it, and the URL's host is still shown.
    #[test]
    fn a_password_with_any_special_character_is_redacted_as_the_client_reads_it() {
        for c in [
            '/', '?', '#', ':', '@', '%', '&', '=', ';', '\'', '"', '\\', ' ',
        ] {
            let password = format!("Qz{c}7k{c}w");
            let url = format!("postgres://ada:{password}@db.lab:5432/fleet");
            // The client reads the credentials up to the first `@`.
            let parsed = Config::from_str(&url);
            let expected = match parsed {
                Ok(cfg) => cfg
                    .get_password()
                    .map(|p| String::from_utf8_lossy(p).into_owned()),
                Err(_) => None,
            };
            let redacted = redact_arg(&format!("--store={url}"));
            if let Some(p) = &expected {
                assert!(!redacted.contains(p.as_str()), "{c:?}: {redacted}");
            }
            assert!(
                !redacted.contains("Qz") && !redacted.contains("7k"),
                "{c:?}: {redacted}"
            );
            assert!(
                redacted.starts_with("--store=postgres://ada:***@"),
                "{c:?}: {redacted}"
            );
            if c != ' ' {
                assert_eq!(
                    redact(&format!("x {url} y")),
                    format!("x {redacted} y").replace("--store=", ""),
                    "{c:?}"
                );
            }
        }
        assert_eq!(
            redact("postgres://u:pa/ss@host/db"),
            "postgres://u:***@host/db"
        );
        assert_eq!(
            redact("host=db password='a b\\'c' user=ada"),
            "host=db password=*** user=ada"
        );
    }

    #[test]
    fn every_connection_gets_timeouts_and_the_url_may_lengthen_them() {
        let t = PgTarget::parse("postgres://ada@db.lab/fleet").unwrap();
        assert_eq!(t.deadline, DEFAULT_STATEMENT_TIMEOUT + DEADLINE_MARGIN);
        assert_eq!(
            t.config.get_options(),
            Some("-c statement_timeout=5000 -c idle_in_transaction_session_timeout=60000")
        );
        assert_eq!(t.config.get_keepalives_idle(), KEEPALIVE_IDLE);
        assert_eq!(t.config.get_tcp_user_timeout(), Some(&TCP_USER_TIMEOUT));
        assert_eq!(
            t.config.get_connect_timeout(),
            Some(&DEFAULT_CONNECT_TIMEOUT)
        );
        let t = PgTarget::parse(
            "postgres://ada@db.lab/fleet?connect_timeout=2&options=-c%20statement_timeout%3D30s",
        )
        .unwrap();
        assert_eq!(t.deadline, Duration::from_secs(31));
        assert_eq!(
            t.config.get_connect_timeout(),
            Some(&Duration::from_secs(2))
        );
        assert!(t
            .config
            .get_options()
            .unwrap()
            .ends_with("-c statement_timeout=30s"));
        let t = PgTarget::parse("postgres://a@h/d?options=--statement_timeout=0").unwrap();
        assert_eq!(t.deadline, UNBOUNDED_DEADLINE);
        assert_eq!(
            setting_ms("-c statement_timeout=250", "statement_timeout"),
            Some(250)
        );
        assert_eq!(
            setting_ms("-c statement_timeout=2min", "statement_timeout"),
            Some(120_000)
        );
        assert_eq!(
            setting_ms("-c statement_timeout=2d", "statement_timeout"),
            None
        );
    }

    #[test]
    fn a_bad_url_is_one_line_without_the_password() {
        let e = PgTarget::parse("postgres://ada:s3cret@db.lab:notaport/fleet").unwrap_err();
        assert!(!e.contains("s3cret"), "{e}");
        assert!(!e.contains('\n'));
        assert!(is_postgres_url("postgresql://x/y"));
        assert!(!is_postgres_url("/tmp/postgres.db"));
    }
}
