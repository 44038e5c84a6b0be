//! `xlens cloud create`: a VM serving a bucket's log directory.

use super::*;

pub(super) struct CreateArgs {
    pub(super) logdir: String,
    pub(super) zone: String,
    pub(super) name: Option<String>,
    pub(super) machine_type: String,
    pub(super) port: u16,
    pub(super) binary: Option<PathBuf>,
    pub(super) yes: bool,
}

pub(super) fn create(gc: &Gcloud, a: &CreateArgs) -> Result<()> {
    let logdir = a.logdir.trim_end_matches('/').to_string();
    let Some(bucket) = gs_bucket(&logdir) else {
        bail!("--logdir must be a gs://BUCKET/PATH URL (the VM reads it with its own credentials), not `{}`", a.logdir);
    };
    if logdir.contains(',') {
        bail!("the log directory `{logdir}` has a comma, which gcloud's --metadata cannot carry");
    }
    let name = match &a.name {
        Some(n) if valid_vm_name(n) => n.clone(),
        Some(n) => bail!("`{n}` is not a VM name: a lowercase letter, then lowercase letters, digits or dashes (at most 63, not ending in a dash)"),
        None => format!(
            "xlens-{}-{}",
            &logdir_label(&logdir)[..8],
            &xlens_server::access::generate_token()?[..6]
        ),
    };
    gc.preflight()?;
    if let Some(vms) = list_vms(gc, None, Some(&logdir))? {
        if !vms.is_empty() && !a.yes {
            let names: Vec<String> = vms
                .iter()
                .map(|v| format!("{} ({})", v.name, v.zone))
                .collect();
            bail!(
                "{logdir} is already served by {}; `xlens cloud connect --logdir {logdir}` opens it, or pass --yes to create another",
                names.join(", ")
            );
        }
    }
    let arch = machine_arch(&a.machine_type);
    let what = format!("a {} VM", a.machine_type);
    let (path, bytes) = binary_for(a.binary.as_ref(), arch, &what)?;
    let binary_url = stage_binary(gc, bucket, arch, &bytes, &path)?;
    let token = xlens_server::access::generate_token()?;
    let script =
        std::env::temp_dir().join(format!("xlens-startup-{}-{name}.sh", std::process::id()));
    std::fs::write(&script, STARTUP_SCRIPT)
        .with_context(|| format!("writing the startup script to {}", script.display()))?;
    let args = vec![
        "compute".to_string(),
        "instances".into(),
        "create".into(),
        name.clone(),
        format!("--zone={}", a.zone),
        format!("--machine-type={}", a.machine_type),
        "--image-family=debian-12".into(),
        format!(
            "--image-project=debian-cloud"
        ),
        // Reading the bucket is all the server needs.
        "--scopes=storage-ro".into(),
        "--tags=xlens-server".into(),
        format!(
            "--labels=xlens=server,xlens-version={},xlens-logdir={}",
            version_label(),
            logdir_label(&logdir)
        ),
        format!(
            "--metadata=xlens-logdir={logdir},xlens-binary={binary_url},xlens-port={},xlens-token={token}",
            a.port
        ),
        format!("--metadata-from-file=startup-script={}", script.display()),
        "--format=json".into(),
    ];
    let out = gc.output(&args);
    if !gc.dry_run {
        let _ = std::fs::remove_file(&script);
    }
    let Some(out) = out? else {
        eprintln!(
            "xlens: (dry run) the startup script is in {}",
            script.display()
        );
        return Ok(());
    };
    let vm = serde_json::from_str::<Value>(&out)
        .ok()
        .map(|v| parse_vms(&v))
        .and_then(|v| v.into_iter().next());
    println!(
        "created {name} in {} serving {logdir} on port {} (it starts serving about a minute after boot)",
        a.zone, a.port
    );
    println!(
        "open it through an SSH tunnel:  xlens cloud connect --name {name} --zone {}",
        a.zone
    );
    if let Some(ip) = vm.and_then(|v| v.external_ip) {
        println!(
            "or directly, once a firewall rule lets you reach tcp:{} on the network tag xlens-server\n  (e.g. gcloud compute firewall-rules create xlens-{} --allow=tcp:{} --target-tags=xlens-server --source-ranges=YOUR_IP/32):\n  http://{ip}:{}/?token={token}",
            a.port, a.port, a.port, a.port
        );
    }
    Ok(())
}
