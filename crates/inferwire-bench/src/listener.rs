//! The server behind a local port, found in /proc (Linux): the processes holding the
//! socket that listens on it. `--server-cpu` measures those instead of asking for a PID:
//! `inferwire serve` runs a supervisor and workers that all hold the listening sockets,
//! so `pgrep` finds several, while the supervisor's process tree is the whole server.
use std::collections::HashSet;

use crate::cpu;

/// TCP_LISTEN in the `st` column of /proc/net/tcp.
const LISTEN: &str = "0A";

/// The inode of the socket a /proc/net/tcp or tcp6 line describes, when it listens on
/// `port`: `sl local_address rem_address st ... uid timeout inode ...`, the address as
/// hex `ADDR:PORT`.
fn listening_inode(line: &str, port: u16) -> Option<u64> {
    let f: Vec<&str> = line.split_whitespace().collect();
    let (_, local_port) = f.get(1)?.rsplit_once(':')?;
    if u16::from_str_radix(local_port, 16).ok()? != port || *f.get(3)? != LISTEN {
        return None;
    }
    f.get(9)?.parse().ok().filter(|&inode| inode != 0)
}

/// The inodes of the IPv4 and IPv6 sockets listening on `port` in this network namespace.
fn listening_inodes(port: u16) -> HashSet<u64> {
    ["/proc/net/tcp", "/proc/net/tcp6"]
        .iter()
        .filter_map(|p| std::fs::read_to_string(p).ok())
        .flat_map(|table| {
            table
                .lines()
                .skip(1) // the column names
                .filter_map(|l| listening_inode(l, port))
                .collect::<Vec<_>>()
        })
        .collect()
}

/// The processes with one of `inodes` among their open files. Another user's processes
/// cannot be read without privileges and are left out.
fn holders(inodes: &HashSet<u64>) -> Vec<u32> {
    let links: HashSet<String> = inodes.iter().map(|i| format!("socket:[{i}]")).collect();
    cpu::pids()
        .into_iter()
        .filter(|pid| {
            let Ok(fds) = std::fs::read_dir(format!("/proc/{pid}/fd")) else {
                return false;
            };
            fds.flatten().any(|fd| {
                std::fs::read_link(fd.path())
                    .ok()
                    .and_then(|l| l.to_str().map(|l| links.contains(l)))
                    .unwrap_or(false)
            })
        })
        .collect()
}

/// The holders no other holder is an ancestor of: a supervisor whose workers inherited
/// its sockets, or each of several servers sharing a port (SO_REUSEPORT).
fn roots(holders: &[u32], parent: impl Fn(u32) -> Option<u32>) -> Vec<u32> {
    let set: HashSet<u32> = holders.iter().copied().collect();
    let mut out: Vec<u32> = holders
        .iter()
        .copied()
        .filter(|&h| {
            let mut p = parent(h);
            // Bounded: a PID reused while walking cannot make this loop forever.
            for _ in 0..64 {
                match p {
                    Some(q) if set.contains(&q) => return false,
                    Some(q) if q > 1 => p = parent(q),
                    _ => break,
                }
            }
            true
        })
        .collect();
    out.sort_unstable();
    out
}

/// Host and port of a URL (`http://host:port/path`, `grpcs://host:port`) or of a
/// `host:port` address; the scheme's port when none is written.
pub fn host_port(addr: &str) -> Result<(String, u16), String> {
    let (scheme, rest) = addr.split_once("://").unwrap_or(("", addr));
    let authority = rest.split(['/', '?']).next().unwrap_or("");
    let authority = authority.rsplit_once('@').map_or(authority, |(_, a)| a);
    let default = match scheme {
        "https" | "grpcs" => Some(443),
        "http" => Some(80),
        _ => None,
    };
    // `[::1]:9000`: the port follows the bracket.
    let (host, port) = match authority.rsplit_once(':') {
        Some((h, p)) if !p.contains(']') => (h, Some(p)),
        _ => (authority, None),
    };
    let port = match port {
        Some(p) => p.parse().map_err(|_| format!("{addr:?}: bad port {p:?}"))?,
        None => default.ok_or_else(|| format!("{addr:?}: no port"))?,
    };
    let host = host.trim_start_matches('[').trim_end_matches(']');
    Ok((host.to_ascii_lowercase(), port))
}

/// Whether `host` names this machine.
fn local(host: &str) -> bool {
    matches!(host, "localhost" | "::1" | "::" | "0.0.0.0")
        || host.ends_with(".localhost")
        || (host.starts_with("127.") && host.parse::<std::net::Ipv4Addr>().is_ok())
}

/// The server behind `addr` (a URL or `host:port`) for `flag`: see `on_port`.
pub fn server_of(addr: &str, flag: &str) -> Result<Vec<u32>, String> {
    let (host, port) = host_port(addr)?;
    if !local(&host) {
        return Err(format!(
            "{flag} needs a server on this machine, and {host} is not 127.0.0.1, \
             localhost, ::1 or 0.0.0.0"
        ));
    }
    on_port(port, flag)
}

/// The processes whose trees are the server listening on `port`: the roots among those
/// holding its listening socket.
pub fn on_port(port: u16, flag: &str) -> Result<Vec<u32>, String> {
    let inodes = listening_inodes(port);
    if inodes.is_empty() {
        return Err(format!(
            "{flag}: no process listens on port {port} on this machine"
        ));
    }
    let found = roots(&holders(&inodes), cpu::parent);
    if found.is_empty() {
        return Err(format!(
            "{flag}: port {port} is listened on, but by no process this user may look \
             into (another user's: run as that user or root, or give --server-pid)"
        ));
    }
    Ok(found)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    #[test]
    fn proc_net_tcp_lines() {
        let v4 = "  90: 0100007F:4AB3 00000000:0000 0A 00000000:00000000 00:00000000 \
                  00000000     0        0 490116 1 0000000071b6644f 100 0 0 10 0";
        assert_eq!(listening_inode(v4, 19123), Some(490116));
        assert_eq!(listening_inode(v4, 19124), None);
        // An established connection from that port is not the listener.
        let established = v4.replacen(" 0A ", " 01 ", 1);
        assert_eq!(listening_inode(&established, 19123), None);
        let v6 = "   0: 00000000000000000000000001000000:2328 \
                  00000000000000000000000000000000:0000 0A 00000000:00000000 \
                  00:00000000 00000000  1000        0 77 1 0000000000000000 100 0 0 10 0";
        assert_eq!(listening_inode(v6, 9000), Some(77));
        assert_eq!(
            listening_inode("  sl  local_address rem_address   st", 9000),
            None
        );
        assert_eq!(listening_inode("", 9000), None);
    }

    #[test]
    fn roots_are_the_holders_without_a_holding_ancestor() {
        // 10 is a supervisor with workers 11 and 12; 30 shares the port (SO_REUSEPORT)
        // and its worker 32 sits below a process that holds nothing (31).
        let parents = HashMap::from([(10, 1), (11, 10), (12, 10), (30, 2), (31, 30), (32, 31)]);
        let parent = |p: u32| parents.get(&p).copied();
        assert_eq!(roots(&[12, 11, 10], parent), vec![10]);
        assert_eq!(roots(&[32, 10, 30, 11], parent), vec![10, 30]);
        assert_eq!(roots(&[11, 12], parent), vec![11, 12]);
    }

    #[test]
    fn hosts_and_ports() {
        let hp = |a: &str| host_port(a).unwrap();
        assert_eq!(
            hp("http://127.0.0.1:9000/api/v1.0/predictions"),
            ("127.0.0.1".into(), 9000)
        );
        assert_eq!(hp("127.0.0.1:5000"), ("127.0.0.1".into(), 5000));
        assert_eq!(hp("grpcs://LocalHost:5001"), ("localhost".into(), 5001));
        assert_eq!(hp("http://[::1]:8080/x"), ("::1".into(), 8080));
        assert_eq!(hp("https://localhost/x?y=1:2"), ("localhost".into(), 443));
        assert!(host_port("localhost").is_err());
        assert!(host_port("http://localhost:http/").is_err());
        for h in ["127.0.0.1", "127.1.2.3", "localhost", "::1", "0.0.0.0"] {
            assert!(local(h), "{h}");
        }
        for h in ["example.com", "10.0.0.5", "127.example.com"] {
            assert!(!local(h), "{h}");
        }
        let e = server_of("http://example.com:9000/", "--server-cpu").unwrap_err();
        assert!(
            e.starts_with("--server-cpu needs a server on this machine"),
            "{e}"
        );
    }

    #[test]
    fn finds_the_process_listening_here() {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = l.local_addr().unwrap().port();
        let url = format!("http://127.0.0.1:{port}/x");
        assert_eq!(
            server_of(&url, "--server-cpu"),
            Ok(vec![std::process::id()])
        );
        drop(l);
        let e = on_port(port, "--server-cpu").unwrap_err();
        assert_eq!(
            e,
            format!("--server-cpu: no process listens on port {port} on this machine")
        );
    }
}
