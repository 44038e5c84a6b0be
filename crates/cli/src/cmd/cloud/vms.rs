//! The VMs `create` made: listing, choosing one, deleting and connecting to it.

use super::*;

/// One VM `create` made, as `list` shows it.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Vm {
    pub name: String,
    pub zone: String,
    pub status: String,
    pub logdir: String,
    pub port: Option<u16>,
    #[serde(skip)]
    pub token: Option<String>,
    pub external_ip: Option<String>,
    pub internal_ip: Option<String>,
    pub version: Option<String>,
    /// `http://EXTERNAL_IP:PORT/` (reachable once a firewall rule allows it).
    pub url: Option<String>,
}

/// The VMs in `gcloud compute instances list --format=json` output.
pub fn parse_vms(v: &Value) -> Vec<Vm> {
    let Some(list) = v.as_array() else {
        return Vec::new();
    };
    list.iter()
        .map(|i| {
            let meta = |k: &str| {
                i["metadata"]["items"]
                    .as_array()
                    .and_then(|items| items.iter().find(|it| it["key"] == k))
                    .and_then(|it| it["value"].as_str())
                    .map(str::to_string)
            };
            let nic = &i["networkInterfaces"][0];
            let external_ip = nic["accessConfigs"][0]["natIP"]
                .as_str()
                .map(str::to_string);
            let port = meta("xlens-port").and_then(|p| p.parse().ok());
            Vm {
                name: i["name"].as_str().unwrap_or_default().to_string(),
                zone: i["zone"]
                    .as_str()
                    .unwrap_or_default()
                    .rsplit('/')
                    .next()
                    .unwrap_or_default()
                    .to_string(),
                status: i["status"].as_str().unwrap_or("UNKNOWN").to_string(),
                logdir: meta("xlens-logdir").unwrap_or_else(|| "?".into()),
                url: match (&external_ip, port) {
                    (Some(ip), Some(p)) => Some(format!("http://{ip}:{p}/")),
                    _ => None,
                },
                port,
                token: meta("xlens-token"),
                internal_ip: nic["networkIP"].as_str().map(str::to_string),
                external_ip,
                version: i["labels"]["xlens-version"].as_str().map(str::to_string),
            }
        })
        .collect()
}

/// The xlens VMs (in `zone`, serving `logdir`), or `None` in a dry run.
pub(super) fn list_vms(
    gc: &Gcloud,
    zone: Option<&str>,
    logdir: Option<&str>,
) -> Result<Option<Vec<Vm>>> {
    let mut filter = "labels.xlens=server".to_string();
    if let Some(l) = logdir {
        filter.push_str(&format!(" AND labels.xlens-logdir={}", logdir_label(l)));
    }
    let mut args = vec![
        "compute".to_string(),
        "instances".into(),
        "list".into(),
        format!("--filter={filter}"),
    ];
    if let Some(z) = zone {
        args.push(format!("--zones={z}"));
    }
    args.push("--format=json".into());
    let Some(out) = gc.output(&args)? else {
        return Ok(None);
    };
    let v: Value = serde_json::from_str(&out)
        .with_context(|| format!("gcloud's instance list is not JSON: {}", first_line(&out)))?;
    let mut vms = parse_vms(&v);
    // The label is a hash: keep only exact log directories.
    if let Some(l) = logdir {
        vms.retain(|vm| {
            vm.logdir == "?" || vm.logdir.trim_end_matches('/') == l.trim_end_matches('/')
        });
    }
    Ok(Some(vms))
}

pub(super) fn first_line(s: &str) -> &str {
    s.lines().next().unwrap_or_default()
}

pub(super) fn list(
    gc: &Gcloud,
    zone: Option<&str>,
    logdir: Option<&str>,
    json: bool,
) -> Result<()> {
    gc.preflight()?;
    let Some(vms) = list_vms(gc, zone, logdir)? else {
        return Ok(());
    };
    if json {
        println!("{}", serde_json::to_string_pretty(&vms)?);
        return Ok(());
    }
    if vms.is_empty() {
        println!(
            "no xlens VMs{}",
            zone.map(|z| format!(" in {z}")).unwrap_or_default()
        );
        return Ok(());
    }
    let rows: Vec<[String; 5]> = vms
        .iter()
        .map(|v| {
            [
                v.name.clone(),
                v.zone.clone(),
                v.logdir.clone(),
                v.status.clone(),
                v.url.clone().unwrap_or_else(|| "-".into()),
            ]
        })
        .collect();
    let head = ["NAME", "ZONE", "LOG_DIRECTORY", "STATE", "URL"];
    let widths: Vec<usize> = (0..5)
        .map(|c| {
            rows.iter()
                .map(|r| r[c].len())
                .chain([head[c].len()])
                .max()
                .unwrap_or(0)
        })
        .collect();
    let line = |cells: [&str; 5]| {
        let mut s = String::new();
        for (c, cell) in cells.iter().enumerate() {
            if c + 1 < cells.len() {
                s.push_str(&format!("{cell:<w$}  ", w = widths[c]));
            } else {
                s.push_str(cell);
            }
        }
        s
    };
    println!("{}", line(head));
    for r in &rows {
        println!("{}", line([&r[0], &r[1], &r[2], &r[3], &r[4]]));
    }
    Ok(())
}

/// The VMs a `--name`/`--logdir` selection names (at least one), or `None` in a dry run.
pub(super) fn select(
    gc: &Gcloud,
    name: Option<&str>,
    logdir: Option<&str>,
    zone: Option<&str>,
) -> Result<Option<Vec<Vm>>> {
    let Some(mut vms) = list_vms(gc, zone, logdir)? else {
        return Ok(None);
    };
    if let Some(n) = name {
        vms.retain(|v| v.name == n);
    }
    let where_ = zone.map(|z| format!(" in {z}")).unwrap_or_default();
    if vms.is_empty() {
        match (name, logdir) {
            (Some(n), _) => {
                bail!("no xlens VM named `{n}`{where_} (`xlens cloud list` shows them)")
            }
            (None, Some(l)) => {
                bail!("no xlens VM serves {l}{where_} (`xlens cloud list` shows them)")
            }
            _ => bail!("no xlens VMs{where_}"),
        }
    }
    Ok(Some(vms))
}

pub(super) fn delete(
    gc: &Gcloud,
    name: Option<String>,
    logdir: Option<String>,
    zone: Option<String>,
    yes: bool,
) -> Result<()> {
    gc.preflight()?;
    let Some(vms) = select(gc, name.as_deref(), logdir.as_deref(), zone.as_deref())? else {
        // Dry run: the command that would follow, for a named VM.
        if let (Some(n), Some(z)) = (&name, &zone) {
            gc.output(&[
                "compute",
                "instances",
                "delete",
                n,
                &format!("--zone={z}"),
                "--quiet",
            ])?;
        }
        return Ok(());
    };
    for v in &vms {
        eprintln!("  {} ({}, {}, {})", v.name, v.zone, v.logdir, v.status);
    }
    if !yes {
        eprint!(
            "delete {} VM{}? [y/N] ",
            vms.len(),
            if vms.len() == 1 { "" } else { "s" }
        );
        let _ = std::io::stderr().flush();
        let mut answer = String::new();
        std::io::stdin().lock().read_line(&mut answer).ok();
        if !matches!(answer.trim(), "y" | "Y" | "yes") {
            bail!("nothing deleted");
        }
    }
    let mut zones: Vec<&str> = vms.iter().map(|v| v.zone.as_str()).collect();
    zones.sort_unstable();
    zones.dedup();
    for z in zones {
        let mut args = vec!["compute".to_string(), "instances".into(), "delete".into()];
        args.extend(vms.iter().filter(|v| v.zone == z).map(|v| v.name.clone()));
        args.push(format!("--zone={z}"));
        args.push("--quiet".into());
        gc.output(&args)?;
    }
    println!(
        "deleted {}",
        vms.iter()
            .map(|v| v.name.as_str())
            .collect::<Vec<_>>()
            .join(", ")
    );
    Ok(())
}

pub(super) fn connect(
    gc: &Gcloud,
    name: Option<String>,
    logdir: Option<String>,
    zone: Option<String>,
    local_port: Option<u16>,
) -> Result<()> {
    gc.preflight()?;
    let vm = match select(gc, name.as_deref(), logdir.as_deref(), zone.as_deref())? {
        Some(vms) if vms.len() > 1 => bail!(
            "{} xlens VMs match: {}; pick one with --name (and --zone)",
            vms.len(),
            vms.iter()
                .map(|v| format!("{} ({})", v.name, v.zone))
                .collect::<Vec<_>>()
                .join(", ")
        ),
        Some(mut vms) => vms.remove(0),
        None => Vm {
            name: name.unwrap_or_else(|| "NAME".into()),
            zone: zone.unwrap_or_else(|| "ZONE".into()),
            status: "?".into(),
            logdir: logdir.unwrap_or_default(),
            port: Some(8791),
            token: Some("TOKEN".into()),
            external_ip: None,
            internal_ip: None,
            version: None,
            url: None,
        },
    };
    if vm.status != "RUNNING" && vm.status != "?" {
        bail!(
            "{} is {}, not RUNNING (`gcloud compute instances start {} --zone={}`)",
            vm.name,
            vm.status,
            vm.name,
            vm.zone
        );
    }
    let port = vm.port.unwrap_or(8791);
    let local = local_port.unwrap_or(port);
    let token = vm.token.clone().with_context(|| {
        format!(
            "{} has no xlens-token in its metadata: was it made by `xlens cloud create`?",
            vm.name
        )
    })?;
    println!(
        "xlens: {} ({}) serving {}: open http://127.0.0.1:{local}/?token={token} while this tunnel runs (Ctrl-C ends it)",
        vm.name, vm.zone, vm.logdir
    );
    let _ = std::io::stdout().flush();
    gc.interactive(&[
        "compute".to_string(),
        "ssh".into(),
        vm.name.clone(),
        format!("--zone={}", vm.zone),
        "--".into(),
        "-N".into(),
        "-L".into(),
        format!("{local}:localhost:{port}"),
    ])
}
