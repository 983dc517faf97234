//! XIDs from the kernel log. NVML's event API does not deliver every XID (79 "fell off
//! the bus", 119/120 GSP errors may only reach the kernel log), so the agent also reads
//! `/dev/kmsg` where it can (root, or CAP_SYSLOG) and parses the driver's
//! `NVRM: Xid (PCI:0000:3b:00): 79, …` lines. Which device a line concerns is found by
//! its PCI bus id.

use std::io::{Read, Seek, SeekFrom};

/// One XID line: the PCI bus id as printed (`0000:3b:00`) and the code.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KernelXid {
    pub pci_bus_id: String,
    pub code: u32,
}

/// Parses one kernel log record; `None` for anything that is not an NVRM XID line.
pub fn parse_xid_line(line: &str) -> Option<KernelXid> {
    let rest = &line[line.find("NVRM: Xid (")? + "NVRM: Xid (".len()..];
    let (inside, after) = rest.split_once(')')?;
    let pci = inside.strip_prefix("PCI:").unwrap_or(inside).trim();
    let after = after.trim_start_matches(':').trim_start();
    let digits: String = after.chars().take_while(char::is_ascii_digit).collect();
    Some(KernelXid {
        pci_bus_id: pci.to_ascii_lowercase(),
        code: digits.parse().ok()?,
    })
}

/// Whether two spellings of a PCI bus id name the same device: NVML prints
/// `00000000:3B:00.0`, the kernel `0000:3b:00`.
pub fn same_pci_device(nvml: &str, kernel: &str) -> bool {
    fn norm(s: &str) -> String {
        let s = s.to_ascii_lowercase();
        let s = s.split('.').next().unwrap_or(&s).to_owned();
        // Domain: keep the last four hex digits.
        match s.split_once(':') {
            Some((domain, rest)) => {
                let d = &domain[domain.len().saturating_sub(4)..];
                format!("{d:0>4}:{rest}")
            }
            None => s,
        }
    }
    norm(nvml) == norm(kernel)
}

/// A non-blocking reader of `/dev/kmsg` positioned at its end (history is not replayed:
/// old XIDs were reported by the previous run).
#[derive(Debug)]
pub struct KmsgReader {
    file: std::fs::File,
}

impl KmsgReader {
    /// Opens the kernel log; an error when it is not readable (not root, no CAP_SYSLOG).
    pub fn open() -> std::io::Result<Self> {
        use std::os::unix::fs::OpenOptionsExt;
        // O_NONBLOCK: a read with nothing new answers EAGAIN instead of blocking the cycle.
        const O_NONBLOCK: i32 = 0o4000;
        let mut file = std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(O_NONBLOCK)
            .open("/dev/kmsg")?;
        file.seek(SeekFrom::End(0))?;
        Ok(Self { file })
    }

    /// The XID lines logged since the previous call (at most 1024 records per call).
    pub fn drain(&mut self) -> Vec<KernelXid> {
        let mut out = Vec::new();
        let mut buf = [0u8; 8192];
        for _ in 0..1024 {
            match self.file.read(&mut buf) {
                Ok(0) => break,
                Ok(n) => {
                    let record = String::from_utf8_lossy(&buf[..n]);
                    if let Some(xid) = parse_xid_line(&record) {
                        out.push(xid);
                    }
                }
                // EPIPE: records were overwritten before we read them; keep going.
                Err(e) if e.raw_os_error() == Some(32) => continue,
                Err(_) => break,
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_nvrm_xid_line_yields_its_bus_id_and_code() {
        let line = "4,1234,5678901,-;NVRM: Xid (PCI:0000:3b:00): 79, pid='<unknown>', name=<unknown>, GPU has fallen off the bus.";
        assert_eq!(
            parse_xid_line(line),
            Some(KernelXid {
                pci_bus_id: "0000:3b:00".into(),
                code: 79
            })
        );
        assert_eq!(parse_xid_line("6,1,2,-;usb 1-1: new device"), None);
    }

    #[test]
    fn nvml_and_kernel_spellings_of_a_bus_id_match() {
        assert!(same_pci_device("00000000:3B:00.0", "0000:3b:00"));
        assert!(!same_pci_device("00000000:3C:00.0", "0000:3b:00"));
    }
}
