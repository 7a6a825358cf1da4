//! A throwaway single-node Slurm cluster for tests: munged, slurmctld and slurmd (Debian 12's
//! `munge` and `slurm-wlm`, Slurm 22.05) run in the foreground as child processes with their
//! key, socket, configuration, state, spool and logs in a fresh temporary folder and on free
//! ports, so they touch nothing of the machine's own setup. Dropping the cluster cancels its
//! jobs and stops the daemons. Needs root (slurmd runs jobs as their submitter).

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// How long the cluster waits for an event (a daemon up, a job done) before calling it a hang.
/// Never a speed bound: it only turns a hang into a failure, far beyond any run on a loaded
/// machine.
pub const SAFETY: Duration = Duration::from_secs(600);

pub enum Start {
    Up(Cluster),
    /// Why not (missing binaries, not root, a daemon that did not come up).
    Unavailable(String),
}

pub struct Cluster {
    dir: tempfile::TempDir,
    conf: PathBuf,
    /// munged, slurmctld, slurmd, in start order.
    daemons: Vec<(&'static str, Child)>,
}

/// `name` in PATH or the sbin folders (where Debian puts the daemons).
fn find(name: &str) -> Option<PathBuf> {
    let path = std::env::var("PATH").unwrap_or_default();
    let found = path
        .split(':')
        .chain(["/usr/sbin", "/sbin", "/usr/bin"])
        .map(|d| Path::new(d).join(name))
        .find(|p| p.is_file());
    found
}

fn output(cmd: &mut Command) -> Result<String, String> {
    let o = cmd.output().map_err(|e| format!("{cmd:?}: {e}"))?;
    if !o.status.success() {
        return Err(format!("{cmd:?}: {}{}", String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr)));
    }
    Ok(String::from_utf8_lossy(&o.stdout).into_owned())
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("0.0.0.0:0").unwrap().local_addr().unwrap().port()
}

fn tail(path: &Path, lines: usize) -> String {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let all: Vec<&str> = text.lines().collect();
    all[all.len().saturating_sub(lines)..].join("\n")
}

const TERMINAL: &[&str] = &[
    "COMPLETED",
    "FAILED",
    "CANCELLED",
    "TIMEOUT",
    "NODE_FAIL",
    "OUT_OF_MEMORY",
    "PREEMPTED",
    "BOOT_FAIL",
    "DEADLINE",
];

impl Cluster {
    pub fn start() -> Start {
        match Self::try_start() {
            Ok(c) => Start::Up(c),
            Err(e) => Start::Unavailable(e),
        }
    }

    fn try_start() -> Result<Cluster, String> {
        let uid = output(Command::new("id").arg("-u"))?;
        if uid.trim() != "0" {
            return Err("not root (slurmd and munged are started by hand as root)".into());
        }
        let mut bins = Vec::new();
        for b in ["munged", "slurmctld", "slurmd", "sbatch", "scontrol", "scancel", "sinfo"] {
            bins.push(find(b).ok_or_else(|| format!("no `{b}` (apt-get install slurm-wlm munge)"))?);
        }
        let dir = tempfile::Builder::new().prefix("granary-slurm-").tempdir().map_err(|e| e.to_string())?;
        let d = dir.path().to_path_buf();
        let mut c = Cluster { conf: d.join("slurm.conf"), dir, daemons: Vec::new() };
        for sub in ["state", "spool"] {
            std::fs::create_dir(d.join(sub)).unwrap();
        }

        // munged: a fresh key, and its socket, pid, log and seed in the folder.
        let mut key = vec![0u8; 1024];
        std::io::Read::read_exact(&mut std::fs::File::open("/dev/urandom").unwrap(), &mut key).unwrap();
        let key_path = d.join("munge.key");
        std::fs::write(&key_path, key).unwrap();
        std::fs::set_permissions(&key_path, std::os::unix::fs::PermissionsExt::from_mode(0o600)).unwrap();
        let sock = d.join("munge.sock");
        let arg = |flag: &str, p: &Path| format!("--{flag}={}", p.display());
        c.spawn(
            "munged",
            Command::new(&bins[0]).args([
                "--foreground".to_string(),
                "--force".to_string(),
                arg("key-file", &key_path),
                arg("socket", &sock),
                arg("pid-file", &d.join("munged.pid")),
                arg("log-file", &d.join("munged.log")),
                arg("seed-file", &d.join("munged.seed")),
            ]),
        )?;
        c.wait_for("munged's socket", |_| sock.exists())?;

        let host = output(Command::new("hostname").arg("-s"))?.trim().to_string();
        let node = output(Command::new(&bins[2]).arg("-C"))?;
        let node = node.lines().next().unwrap_or_default().to_string();
        if !node.starts_with("NodeName=") {
            return Err(format!("slurmd -C printed {node:?}"));
        }
        let (ctld_port, d_port) = (free_port(), free_port());
        let p = |name: &str| d.join(name).display().to_string();
        let conf = format!(
            "ClusterName=granarytest\n\
             SlurmctldHost={host}\n\
             SlurmUser=root\n\
             SlurmctldPort={ctld_port}\n\
             SlurmdPort={d_port}\n\
             AuthType=auth/munge\n\
             AuthInfo=socket={sock}\n\
             CredType=cred/munge\n\
             StateSaveLocation={state}\n\
             SlurmdSpoolDir={spool}\n\
             SlurmctldPidFile={ctld_pid}\n\
             SlurmdPidFile={d_pid}\n\
             SlurmctldLogFile={ctld_log}\n\
             SlurmdLogFile={d_log}\n\
             ProctrackType=proctrack/pgid\n\
             TaskPlugin=task/none\n\
             SelectType=select/cons_tres\n\
             SelectTypeParameters=CR_CPU\n\
             AccountingStorageType=accounting_storage/none\n\
             JobAcctGatherType=jobacct_gather/none\n\
             JobCompType=jobcomp/none\n\
             MpiDefault=none\n\
             ReturnToService=2\n\
             {node} State=UNKNOWN\n\
             PartitionName=test Nodes=ALL Default=YES MaxTime=INFINITE State=UP\n",
            sock = sock.display(),
            state = p("state"),
            spool = p("spool"),
            ctld_pid = p("slurmctld.pid"),
            d_pid = p("slurmd.pid"),
            ctld_log = p("slurmctld.log"),
            d_log = p("slurmd.log"),
        );
        std::fs::write(&c.conf, conf).unwrap();
        let conf = c.conf.clone();
        c.spawn("slurmctld", Command::new(&bins[1]).arg("-D").arg("-f").arg(&conf))?;
        c.spawn("slurmd", Command::new(&bins[2]).arg("-D").arg("-f").arg(&conf))?;
        c.wait_for("an idle node", |c| {
            c.cmd("sinfo")
                .args(["-h", "-o", "%T"])
                .output()
                .is_ok_and(|o| String::from_utf8_lossy(&o.stdout).trim() == "idle")
        })?;
        Ok(c)
    }

    fn spawn(&mut self, name: &'static str, cmd: &mut Command) -> Result<(), String> {
        let log = std::fs::File::create(self.dir().join(format!("{name}.out"))).unwrap();
        let child = cmd
            .stdin(Stdio::null())
            .stdout(log.try_clone().unwrap())
            .stderr(log)
            .spawn()
            .map_err(|e| format!("{name}: {e}"))?;
        self.daemons.push((name, child));
        Ok(())
    }

    /// Waits for `ready`; an error as soon as a daemon exits, or after [`SAFETY`] (a hang).
    fn wait_for(&mut self, what: &str, mut ready: impl FnMut(&Cluster) -> bool) -> Result<(), String> {
        let (limit, deadline) = (SAFETY, Instant::now() + SAFETY);
        while !ready(self) {
            for (name, child) in &mut self.daemons {
                if let Ok(Some(st)) = child.try_wait() {
                    return Err(format!("{name} exited ({st}) waiting for {what}\n{}", self_logs(self.dir.path())));
                }
            }
            if Instant::now() > deadline {
                return Err(format!("no {what} after {limit:?}\n{}", self_logs(self.dir.path())));
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        Ok(())
    }

    pub fn dir(&self) -> &Path {
        self.dir.path()
    }

    /// A Slurm client command talking to this cluster.
    pub fn cmd(&self, name: &str) -> Command {
        let mut c = Command::new(find(name).unwrap_or_else(|| name.into()));
        c.env("SLURM_CONF", &self.conf).env_remove("SLURM_ARRAY_TASK_ID").env_remove("JOB_COMPLETION_INDEX");
        c
    }

    /// Submits the batch script `script` as a user does, `sbatch --parsable OPTS SCRIPT ARGS`
    /// run in `cwd` (the job's working folder, where the script's own `#SBATCH --output` lands),
    /// with `env` added to the environment sbatch hands the job. Returns the job id.
    pub fn sbatch(&self, cwd: &Path, opts: &[&str], script: &Path, args: &[&str], env: &[(&str, &Path)]) -> String {
        let mut cmd = self.cmd("sbatch");
        cmd.current_dir(cwd).arg("--parsable").args(opts).arg(script).args(args);
        for (k, v) in env {
            cmd.env(k, v);
        }
        let id = output(&mut cmd).unwrap_or_else(|e| panic!("sbatch: {e}\n{}", self.logs()));
        id.trim().split(';').next().unwrap_or_default().to_string()
    }

    pub fn scancel(&self, id: &str) {
        output(self.cmd("scancel").arg(id)).unwrap_or_else(|e| panic!("scancel: {e}"));
    }

    /// `JobState` of a job or array task (`ID_I`), from `scontrol show job`.
    pub fn state(&self, id: &str) -> Option<String> {
        let o = self.cmd("scontrol").args(["show", "job", id]).output().ok()?;
        let text = String::from_utf8_lossy(&o.stdout);
        let state = text.split_whitespace().find_map(|w| w.strip_prefix("JobState="))?;
        if state == "PENDING" && text.contains("DependencyNeverSatisfied") {
            return Some("PENDING (DependencyNeverSatisfied)".into());
        }
        Some(state.to_string())
    }

    /// Waits for a job or array task to end; returns its final state (panics after [`SAFETY`]:
    /// a job that never ends).
    pub fn wait_done(&self, id: &str) -> String {
        let (limit, deadline) = (SAFETY, Instant::now() + SAFETY);
        loop {
            if let Some(s) = self.state(id) {
                if TERMINAL.contains(&s.as_str()) || s.contains("NeverSatisfied") {
                    return s;
                }
            }
            assert!(Instant::now() < deadline, "job {id} not done after {limit:?}\n{}", self.logs());
            std::thread::sleep(Duration::from_millis(200));
        }
    }

    /// The tails of the daemons' logs and every job's output, for failure messages.
    pub fn logs(&self) -> String {
        self_logs(self.dir())
    }
}

fn self_logs(dir: &Path) -> String {
    let mut s = String::new();
    let mut files: Vec<PathBuf> =
        ["munged.log", "slurmctld.log", "slurmd.log", "munged.out", "slurmctld.out", "slurmd.out"]
            .iter()
            .map(|f| dir.join(f))
            .collect();
    // Job output: `*.out` in the folders jobs were submitted from (the cluster's subfolders).
    let mut jobs: Vec<PathBuf> = std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .filter(|e| e.path().is_dir())
        .flat_map(|d| std::fs::read_dir(d.path()).into_iter().flatten().flatten())
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "out"))
        .collect();
    jobs.sort();
    files.extend(jobs);
    for f in files.iter().filter(|f| f.exists()) {
        s += &format!("--- {}\n{}\n", f.display(), tail(f, 15));
    }
    s
}

impl Drop for Cluster {
    fn drop(&mut self) {
        // Cancel whatever is left (this cluster's jobs only), then stop the daemons newest
        // first: SIGTERM, and SIGKILL after a grace period.
        if self.daemons.len() == 3 {
            let _ = self.cmd("scancel").args(["--user", "root"]).output();
            // Until no job is left (bounded: this is teardown, nothing is asserted).
            let deadline = Instant::now() + Duration::from_secs(30);
            while Instant::now() < deadline
                && self.cmd("squeue").args(["-h"]).output().is_ok_and(|o| !o.stdout.is_empty())
            {
                std::thread::sleep(Duration::from_millis(100));
            }
        }
        while let Some((_, mut child)) = self.daemons.pop() {
            let _ = Command::new("kill").args(["-TERM", &child.id().to_string()]).status();
            let deadline = Instant::now() + Duration::from_secs(5);
            while matches!(child.try_wait(), Ok(None)) && Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(50));
            }
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}
