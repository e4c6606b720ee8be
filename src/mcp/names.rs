//! Names: the server's name, from `--name` or from the command that starts
//! it, and the tool names gavel decides on, `mcp__SERVER__TOOL` (Claude
//! Code's spelling, so one policy rule matches a call whether it came
//! through Claude Code's hook or through `gavel mcp`).

/// Programs that start a server named by their first operand.
const LAUNCHERS: &[&str] = &[
    "npx", "bunx", "pnpx", "uvx", "pipx", "node", "nodejs", "deno", "bun", "python", "python3",
    "uv", "pnpm", "yarn", "npm", "docker", "podman",
];

/// Words after a launcher that are verbs, not the server.
const VERBS: &[&str] = &["run", "exec", "dlx", "x", "tool", "-m"];

/// The name gavel gives the server that `command` starts: the package or
/// program after any launcher (`npx -y @modelcontextprotocol/server-filesystem`
/// gives `server-filesystem`), without its scope, version and extension,
/// then without a leading `mcp-server-`, `server-` or `mcp-` and a trailing
/// `-mcp-server`, `-mcp` or `-server` (so `filesystem`), with any character
/// but letters, digits, `_` and `-` made `_`.
pub fn server_name(command: &[String]) -> String {
    let mut words = command.iter().map(String::as_str);
    let mut word = words.next().unwrap_or("");
    if LAUNCHERS.contains(&basename(word)) {
        word = words
            .find(|w| !w.starts_with('-') && !VERBS.contains(w))
            .unwrap_or(word);
    }
    let mut name = basename(word);
    // A package's version (`pkg@1.2.3`, after the scope's `@`).
    if let Some(at) = name.rfind('@').filter(|&at| at > 0) {
        name = &name[..at];
    }
    for extension in [".js", ".mjs", ".cjs", ".ts", ".py", ".exe"] {
        if let Some(stem) = name.strip_suffix(extension) {
            name = stem;
        }
    }
    for prefix in ["mcp-server-", "server-", "mcp-"] {
        if let Some(rest) = name.strip_prefix(prefix).filter(|r| !r.is_empty()) {
            name = rest;
            break;
        }
    }
    for suffix in ["-mcp-server", "-mcp", "-server"] {
        if let Some(rest) = name.strip_suffix(suffix).filter(|r| !r.is_empty()) {
            name = rest;
            break;
        }
    }
    let name = sanitize(name);
    if name.is_empty() {
        "server".to_owned()
    } else {
        name
    }
}

/// The name of a remote server, from its URL: the host's distinctive
/// label (without a leading `mcp.`, `api.` or `www.` and without the
/// top-level domain: `https://mcp.notion.com/mcp` is `notion`), `local`
/// for localhost or an IP address.
pub fn url_server_name(url: &str) -> String {
    let rest = url.split_once("://").map_or(url, |(_, rest)| rest);
    let authority = rest.split(['/', '?', '#']).next().unwrap_or_default();
    let authority = authority.rsplit('@').next().unwrap_or_default();
    let host = match authority.strip_prefix('[') {
        Some(v6) => v6.split(']').next().unwrap_or_default(),
        None => authority.split(':').next().unwrap_or_default(),
    };
    if host.eq_ignore_ascii_case("localhost") || host.parse::<std::net::IpAddr>().is_ok() {
        return "local".to_owned();
    }
    let mut labels: Vec<&str> = host.split('.').filter(|l| !l.is_empty()).collect();
    if labels.len() > 1 {
        labels.pop();
    }
    while labels.len() > 1 && ["mcp", "api", "www"].contains(&labels[0]) {
        labels.remove(0);
    }
    let name = sanitize(labels.first().copied().unwrap_or_default());
    if name.is_empty() {
        "server".to_owned()
    } else {
        name.to_ascii_lowercase()
    }
}

/// The last `/`-separated part of `word`.
fn basename(word: &str) -> &str {
    word.rsplit('/').next().unwrap_or(word)
}

/// `name` with every character but ASCII letters, digits, `_` and `-` made `_`.
pub fn sanitize(name: &str) -> String {
    name.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect()
}

/// The server and the tool of a tool name `mcp__SERVER__TOOL` (the server
/// ends at the first `__` after `mcp__`), or `None` for any other name.
pub fn split_tool_name(name: &str) -> Option<(&str, &str)> {
    let rest = name.strip_prefix("mcp__")?;
    let (server, tool) = rest.split_once("__")?;
    (!server.is_empty() && !tool.is_empty()).then_some((server, tool))
}

/// The tool name gavel decides on: `mcp__SERVER__TOOL`.
pub fn tool_name(server: &str, tool: &str) -> String {
    format!("mcp__{server}__{tool}")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn name(command: &str) -> String {
        let words: Vec<String> = command.split_whitespace().map(str::to_owned).collect();
        server_name(&words)
    }

    #[test]
    fn the_server_is_named_after_its_package_or_program() {
        assert_eq!(
            name("npx -y @modelcontextprotocol/server-filesystem /tmp"),
            "filesystem"
        );
        assert_eq!(
            name("npx @modelcontextprotocol/server-github@1.2.0"),
            "github"
        );
        assert_eq!(
            name("/usr/lib/node_modules/.bin/mcp-server-filesystem ."),
            "filesystem"
        );
        assert_eq!(name("uvx mcp-server-git --repository ."), "git");
        assert_eq!(name("node fixtures/mcp/changing.js"), "changing");
        assert_eq!(name("python3 -m weather_mcp"), "weather_mcp");
        assert_eq!(name("docker run -i --rm mcp/github"), "github");
        assert_eq!(name("my.server"), "my_server");
        assert_eq!(name(""), "server");
        assert_eq!(name("npx"), "npx");
    }

    #[test]
    fn a_remote_server_is_named_after_its_host() {
        assert_eq!(url_server_name("https://mcp.notion.com/mcp"), "notion");
        assert_eq!(
            url_server_name("https://api.githubcopilot.com/mcp/"),
            "githubcopilot"
        );
        assert_eq!(url_server_name("https://mcp.linear.app/sse"), "linear");
        assert_eq!(
            url_server_name("http://user@Docs.Example.org:8080/x"),
            "docs"
        );
        assert_eq!(url_server_name("http://127.0.0.1:3001/mcp"), "local");
        assert_eq!(url_server_name("http://[::1]:3001/mcp"), "local");
        assert_eq!(url_server_name("http://localhost/mcp"), "local");
        assert_eq!(url_server_name("http://intranet/mcp"), "intranet");
        assert_eq!(url_server_name("http:///mcp"), "server");
    }

    #[test]
    fn tool_names_follow_claude_code() {
        assert_eq!(
            tool_name("filesystem", "read_file"),
            "mcp__filesystem__read_file"
        );
        assert_eq!(
            split_tool_name("mcp__filesystem__read_file"),
            Some(("filesystem", "read_file"))
        );
        assert_eq!(
            split_tool_name("mcp__everything__get-sum"),
            Some(("everything", "get-sum"))
        );
        assert_eq!(split_tool_name("mcp__a__b__c"), Some(("a", "b__c")));
        for other in [
            "Bash",
            "mcp__",
            "mcp__fs",
            "mcp__fs__",
            "mcp____x",
            "read_file",
        ] {
            assert_eq!(split_tool_name(other), None, "{other}");
        }
    }
}
