//! Setting up a central store: `init` (migrate, the central log's identity
//! and key), `enroll` (a host's role, inbox and grants) and the listing of
//! hosts and logs behind `gavel central logs`.

use crate::chain::{Hash, genesis};
use crate::checkpoint::{SigningKey, VerifierKey};

use super::{Central, CentralError, MAX_HOST, check_name, ident, now_us, sql};

/// The central log's identity, fixed by `init`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CentralMeta {
    pub origin: String,
    pub created_us: i64,
    pub genesis: Hash,
    /// The central verifier key, text form.
    pub verifier: String,
}

/// The central log's record format (its leaves are checkpoint notes; see `cosign`).
pub const CENTRAL_FORMAT: u32 = 1;

/// What `init` did.
#[derive(Debug, Clone)]
pub struct Initialized {
    /// Migrations applied now (0 when the store was up to date).
    pub migrations: usize,
    /// Whether the central log's identity was created now.
    pub created: bool,
    pub meta: CentralMeta,
}

impl Central {
    /// Migrates the store and creates the central log's identity from `key`
    /// (idempotent: a store initialized with the same key is left as it is;
    /// another key is refused).
    pub fn init(&mut self, key: &SigningKey) -> Result<Initialized, CentralError> {
        let migrations = self.migrate()?;
        let verifier = key.verifier().to_text();
        if let Some(meta) = self.meta_opt()? {
            if meta.verifier != verifier {
                return Err(CentralError::OtherKey {
                    stored: meta.verifier,
                });
            }
            return Ok(Initialized {
                migrations,
                created: false,
                meta,
            });
        }
        let mut id = [0u8; 16];
        getrandom::fill(&mut id).map_err(|e| CentralError::Damaged {
            detail: format!("the system gave no randomness for the central log id: {e}"),
        })?;
        let origin = format!("gavel-central/{}", crate::digest::hex(&id));
        let meta = CentralMeta {
            genesis: genesis(&id, &origin, CENTRAL_FORMAT),
            origin,
            created_us: now_us(),
            verifier,
        };
        let inserted = self
            .client
            .execute(
                "INSERT INTO central_meta (id, origin, created_us, genesis, verifier)
                 VALUES (1, $1, $2, $3, $4) ON CONFLICT (id) DO NOTHING",
                &[
                    &meta.origin,
                    &meta.created_us,
                    &&meta.genesis[..],
                    &meta.verifier,
                ],
            )
            .map_err(sql("creating the central log"))?;
        if inserted == 0 {
            // Another init won the race.
            return self.init(key);
        }
        Ok(Initialized {
            migrations,
            created: true,
            meta,
        })
    }

    /// The central log's identity, `None` before `init`.
    pub fn meta_opt(&mut self) -> Result<Option<CentralMeta>, CentralError> {
        let row = self
            .client
            .query_opt(
                "SELECT origin, created_us, genesis, verifier FROM central_meta WHERE id = 1",
                &[],
            )
            .map_err(sql("reading the central log's identity"))?;
        let Some(row) = row else { return Ok(None) };
        let genesis: Vec<u8> = row.get(2);
        Ok(Some(CentralMeta {
            origin: row.get(0),
            created_us: row.get(1),
            genesis: genesis.try_into().map_err(|_| CentralError::Damaged {
                detail: "the central genesis is not 32 bytes".into(),
            })?,
            verifier: row.get(3),
        }))
    }

    /// The central log's identity; an error before `init`.
    pub fn meta(&mut self) -> Result<CentralMeta, CentralError> {
        self.meta_opt()?
            .ok_or_else(|| CentralError::NotInitialized {
                schema: self.schema.clone(),
            })
    }

    /// Checks that `key` is the central key `init` was given.
    pub fn check_key(&mut self, key: &SigningKey) -> Result<CentralMeta, CentralError> {
        let meta = self.meta()?;
        let given = key.verifier().to_text();
        if given != meta.verifier {
            return Err(CentralError::WrongKey {
                given,
                stored: meta.verifier,
            });
        }
        Ok(meta)
    }

    /// Enrolls host `name` with its checkpoint verifier key: the row in
    /// `hosts`, the database role it pushes as (LOGIN, `gavel_host_<name>`
    /// by default), its inbox tables and views, and grants that let the
    /// role do nothing but fill its inbox and read its heads, cosignatures
    /// and refusals. One transaction.
    ///
    /// An existing role is refused unless `existing_role`; a role that is
    /// a superuser, may create roles, bypasses row-level security or
    /// replicates, or is a member of the role enrolling it (the owner), is
    /// always refused: a host's role must be able to do nothing else.
    pub fn enroll(
        &mut self,
        name: &str,
        verifier: &VerifierKey,
        role: Option<&str>,
        existing_role: bool,
    ) -> Result<Enrolled, CentralError> {
        check_name("host name", name, MAX_HOST)?;
        let role = role.map_or_else(|| format!("gavel_host_{name}"), str::to_owned);
        check_name("role name", &role, 63)?;
        self.check()?;
        let schema = ident(&self.schema);
        let inbox_name = self.inbox_schema();
        let inbox = ident(&inbox_name);
        let t = |suffix: &str| format!("{inbox}.{}", ident(&format!("{name}_{suffix}")));
        let (events, logs, checkpoints, policies, heads, refusals) = (
            t("events"),
            t("logs"),
            t("checkpoints"),
            t("policies"),
            t("heads"),
            t("refusals"),
        );
        let (cosigned, central) = (t("cosigned"), t("central"));
        let r = ident(&role);
        let mut tx = self.client.transaction().map_err(sql("starting enroll"))?;
        if let Some(row) = tx
            .query_opt("SELECT role FROM hosts WHERE host = $1", &[&name])
            .map_err(sql("looking up the host"))?
        {
            return Err(CentralError::AlreadyEnrolled {
                host: name.to_owned(),
                role: row.get(0),
            });
        }
        tx.execute(
            "INSERT INTO hosts (host, role, verifier, enrolled_us) VALUES ($1, $2, $3, $4)",
            &[&name, &role, &verifier.to_text(), &now_us()],
        )
        .map_err(sql("enrolling the host"))?;
        let found = tx
            .query_opt(
                "SELECT rolsuper, rolcreaterole, rolbypassrls, rolreplication,
                        pg_has_role(oid, (SELECT oid FROM pg_roles WHERE rolname = current_user), 'MEMBER')
                 FROM pg_roles WHERE rolname = $1",
                &[&role],
            )
            .map_err(sql("looking up the role"))?;
        let role_exists = found.is_some();
        if let Some(found) = found {
            let powers = [
                (found.get::<_, bool>(0), "is a superuser"),
                (found.get(1), "may create roles"),
                (found.get(2), "bypasses row-level security"),
                (found.get(3), "may replicate"),
                (found.get(4), "is a member of the owner role"),
            ];
            if let Some((_, why)) = powers.iter().find(|p| p.0) {
                return Err(CentralError::RoleTooPowerful {
                    role,
                    why: (*why).to_owned(),
                });
            }
            if !existing_role {
                return Err(CentralError::RoleExists { role });
            }
        }
        if !role_exists {
            tx.batch_execute(&format!("CREATE ROLE {r} LOGIN"))
                .map_err(sql("creating the host's role"))?;
        }
        // The inbox holds rows until ingest moves them: UNLOGGED, since a
        // crash that empties it loses nothing (the host pushes what the
        // central heads do not have yet, again).
        tx.batch_execute(&format!(
            "CREATE SCHEMA IF NOT EXISTS {inbox};
             CREATE UNLOGGED TABLE {events} (
                 log_id   bytea  NOT NULL,
                 seq      bigint NOT NULL,
                 ts_us    bigint NOT NULL,
                 kind     text   NOT NULL,
                 call_id  text   NOT NULL,
                 tool     text,
                 action   text,
                 rule_id  text,
                 approval text,
                 status   text,
                 \"user\"   text,
                 host     text,
                 client   text,
                 session  text,
                 agent    text,
                 payload  bytea  NOT NULL,
                 leaf     bytea  NOT NULL,
                 chain    bytea  NOT NULL,
                 PRIMARY KEY (log_id, seq)
             );
             CREATE UNLOGGED TABLE {logs} (
                 log_id     bytea   PRIMARY KEY,
                 origin     text    NOT NULL,
                 format     integer NOT NULL,
                 created_us bigint  NOT NULL,
                 genesis    bytea   NOT NULL
             );
             CREATE UNLOGGED TABLE {checkpoints} (
                 log_id    bytea  NOT NULL,
                 size      bigint NOT NULL,
                 note      text   NOT NULL,
                 pushed_us bigint NOT NULL,
                 PRIMARY KEY (log_id, size)
             );
             CREATE UNLOGGED TABLE {policies} (
                 digest        text   PRIMARY KEY,
                 name          text   NOT NULL,
                 source        text   NOT NULL,
                 first_seen_us bigint NOT NULL
             );
             CREATE VIEW {heads} AS
                 SELECT l.log_id, l.size, l.chain, c.size AS cosigned_size, c.note, c.cosignature
                 FROM {schema}.logs l
                 LEFT JOIN LATERAL (
                     SELECT size, note, cosignature FROM {schema}.checkpoints k
                     WHERE k.log_id = l.log_id ORDER BY k.id DESC LIMIT 1
                 ) c ON true
                 WHERE l.host = '{name}';
             CREATE VIEW {cosigned} AS
                 SELECT k.id, k.log_id, k.size, k.note, k.cosignature
                 FROM {schema}.checkpoints k JOIN {schema}.logs l ON l.log_id = k.log_id
                 WHERE l.host = '{name}';
             CREATE VIEW {central} AS
                 SELECT verifier FROM {schema}.central_meta WHERE id = 1;
             CREATE VIEW {refusals} AS
                 SELECT id, log_id, at_us, first_seq, last_seq, problem, detail
                 FROM {schema}.refusals WHERE host = '{name}';
             GRANT USAGE ON SCHEMA {inbox} TO {r};
             GRANT SELECT, INSERT ON {events}, {logs}, {checkpoints}, {policies} TO {r};
             GRANT SELECT ON {heads}, {refusals}, {cosigned}, {central} TO {r};"
        ))
        .map_err(sql("creating the host's inbox"))?;
        tx.commit().map_err(sql("committing enroll"))?;
        Ok(Enrolled {
            host: name.to_owned(),
            role,
            role_created: !role_exists,
            inbox: inbox_name,
        })
    }

    /// Every enrolled host with its logs (a host with none has one entry
    /// with `log_id` `None`), the last accepted push and the last refusal.
    /// A log the central store never accepted a batch of but refused (a
    /// checkpoint not signed by the enrolled key, another host's log, ...)
    /// has its own entry (`accepted` false), so that no refused push is
    /// invisible; `refused` says when a log's last refusal still stands.
    pub fn list_logs(&mut self) -> Result<Vec<LogListing>, CentralError> {
        let rows = self
            .client
            .query(
                "WITH listed AS (
                     SELECT host, log_id, origin, size, cut_size, created_us, true AS accepted
                       FROM logs
                     UNION ALL
                     SELECT DISTINCT f.host, f.log_id, 'gavel/' || encode(f.log_id, 'hex'),
                            0::bigint, 0::bigint, NULL::bigint, false
                       FROM refusals f
                      WHERE f.log_id IS NOT NULL AND NOT EXISTS
                            (SELECT 1 FROM logs l WHERE l.log_id = f.log_id AND l.host = f.host)
                 )
                 SELECT h.host, h.role, l.log_id, l.origin, l.size, l.cut_size,
                        (SELECT max(accepted_us) FROM checkpoints c
                          WHERE l.accepted AND c.log_id = l.log_id),
                        r.at_us, r.problem, r.detail, r.first_seq, r.last_seq,
                        coalesce(l.accepted, false)
                 FROM hosts h
                 LEFT JOIN listed l ON l.host = h.host
                 LEFT JOIN LATERAL (
                     SELECT at_us, problem, detail, first_seq, last_seq FROM refusals f
                     WHERE f.host = h.host AND (l.log_id IS NULL OR f.log_id = l.log_id OR f.log_id IS NULL)
                     ORDER BY f.id DESC LIMIT 1
                 ) r ON true
                 ORDER BY h.host, coalesce(l.accepted, false) DESC, l.created_us, l.log_id",
                &[],
            )
            .map_err(sql("listing logs"))?;
        Ok(rows
            .iter()
            .map(|row| {
                let size = row.get::<_, Option<i64>>(4).unwrap_or(0);
                let last_refusal = row.get::<_, Option<i64>>(7).map(|at_us| Refused {
                    at_us,
                    problem: row.get(8),
                    detail: row.get(9),
                    first_seq: row.get(10),
                    last_seq: row.get(11),
                });
                let log_id = row.get::<_, Option<Vec<u8>>>(2);
                LogListing {
                    host: row.get(0),
                    role: row.get(1),
                    refused: log_id.is_some()
                        && last_refusal
                            .as_ref()
                            .is_some_and(|r| r.last_seq.is_none_or(|last| last > size)),
                    log_id,
                    origin: row.get(3),
                    size,
                    cut_size: row.get::<_, Option<i64>>(5).unwrap_or(0),
                    last_push_us: row.get(6),
                    accepted: row.get(12),
                    last_refusal,
                }
            })
            .collect())
    }
}

/// What `enroll` made.
#[derive(Debug, Clone)]
pub struct Enrolled {
    pub host: String,
    pub role: String,
    /// Whether the role was created now (else it existed and was granted the inbox).
    pub role_created: bool,
    /// The inbox schema.
    pub inbox: String,
}

/// One line of `gavel central logs`.
#[derive(Debug, Clone)]
pub struct LogListing {
    pub host: String,
    pub role: String,
    pub log_id: Option<Vec<u8>>,
    pub origin: Option<String>,
    pub size: i64,
    pub cut_size: i64,
    pub last_push_us: Option<i64>,
    pub last_refusal: Option<Refused>,
    /// Whether the central store accepted a batch of this log (else it
    /// only refused pushes of it).
    pub accepted: bool,
    /// Whether the log's last refusal still stands: it refused rows the
    /// store has not accepted since.
    pub refused: bool,
}

/// A refusal, briefly.
#[derive(Debug, Clone)]
pub struct Refused {
    pub at_us: i64,
    pub problem: String,
    pub detail: String,
    /// The first seq it names (the first bad one, or the batch's first).
    pub first_seq: Option<i64>,
    /// The last seq of the refused batch.
    pub last_seq: Option<i64>,
}

/// The URL a host pushes with, rebuilt from the owner's: the role as user,
/// the same hosts, ports and database, and of the query only `sslmode` and
/// `options` (never a password, a client key or anything else of the owner's).
pub fn host_url(url: &str, role: &str) -> Option<String> {
    let (scheme, rest) = url.split_once("://")?;
    let (rest, query) = rest.split_once('?').unwrap_or((rest, ""));
    let (authority, path) = match rest.find('/') {
        Some(at) => rest.split_at(at),
        None => (rest, ""),
    };
    let hosts = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
    let kept: Vec<&str> = query
        .split('&')
        .filter(|pair| {
            let key = pair.split_once('=').map_or(*pair, |(k, _)| k);
            matches!(key, "sslmode" | "options")
        })
        .collect();
    let query = if kept.is_empty() {
        String::new()
    } else {
        format!("?{}", kept.join("&"))
    };
    Some(format!("{scheme}://{role}@{hosts}{path}{query}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_host_url_keeps_only_where_and_how_to_connect() {
        let url = host_url(
            "postgres://owner:secret@db.example.com:6543/team?password=x&sslmode=require&sslkey=/k&options=-csearch_path%3Dt1&application_name=a",
            "gavel_host_a",
        )
        .unwrap();
        assert_eq!(
            url,
            "postgres://gavel_host_a@db.example.com:6543/team?sslmode=require&options=-csearch_path%3Dt1"
        );
        assert_eq!(
            host_url("postgresql://o@h1,h2/db", "r").unwrap(),
            "postgresql://r@h1,h2/db"
        );
        assert_eq!(host_url("postgres://h", "r").unwrap(), "postgres://r@h");
    }
}
