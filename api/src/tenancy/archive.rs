//! A gzip-compressed tar archive (POSIX ustar) written in memory: regular files only,
//! which is all a data export needs.

use std::io::Write as _;

const BLOCK: usize = 512;

/// Files added in order, then `finish`ed into `.tar.gz` bytes.
pub struct Archive {
    tar: Vec<u8>,
    mtime: u64,
}

impl Archive {
    /// `mtime`: the files' modification time (seconds since the epoch).
    pub fn new(mtime: u64) -> Archive {
        Archive {
            tar: Vec::new(),
            mtime,
        }
    }

    /// Adds a file; `path` is ASCII and at most 100 bytes (ours always are).
    pub fn add(&mut self, path: &str, contents: &[u8]) {
        let mut header = [0u8; BLOCK];
        put(&mut header[0..100], path.as_bytes());
        put(&mut header[100..108], b"0000644\0");
        put(&mut header[108..116], b"0000000\0");
        put(&mut header[116..124], b"0000000\0");
        put(
            &mut header[124..136],
            format!("{:011o}\0", contents.len()).as_bytes(),
        );
        put(
            &mut header[136..148],
            format!("{:011o}\0", self.mtime).as_bytes(),
        );
        header[156] = b'0';
        put(&mut header[257..265], b"ustar\x0000");
        // The checksum is taken with its own field as spaces.
        header[148..156].fill(b' ');
        let sum: u32 = header.iter().map(|b| u32::from(*b)).sum();
        put(&mut header[148..156], format!("{sum:06o}\0 ").as_bytes());
        self.tar.extend_from_slice(&header);
        self.tar.extend_from_slice(contents);
        let padding = (BLOCK - contents.len() % BLOCK) % BLOCK;
        self.tar.extend(std::iter::repeat_n(0u8, padding));
    }

    /// The archive, ended by two zero blocks and gzip-compressed.
    pub fn finish(mut self) -> std::io::Result<Vec<u8>> {
        self.tar.extend(std::iter::repeat_n(0u8, 2 * BLOCK));
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
        gz.write_all(&self.tar)?;
        gz.finish()
    }
}

fn put(field: &mut [u8], bytes: &[u8]) {
    let n = bytes.len().min(field.len());
    field[..n].copy_from_slice(&bytes[..n]);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn headers_carry_name_size_and_a_valid_checksum() {
        let mut archive = Archive::new(1_700_000_000);
        archive.add("manifest.json", b"{}");
        let gz = archive.finish().expect("gzip");
        let mut tar = Vec::new();
        std::io::Read::read_to_end(&mut flate2::read::GzDecoder::new(&gz[..]), &mut tar)
            .expect("gunzip");
        assert_eq!(tar.len(), 4 * BLOCK, "header, data, two end blocks");
        assert!(tar.starts_with(b"manifest.json\0"));
        assert_eq!(&tar[124..136], b"00000000002\0");
        assert_eq!(&tar[257..263], b"ustar\0");
        let stored = u32::from_str_radix(std::str::from_utf8(&tar[148..154]).expect("octal"), 8)
            .expect("checksum");
        let mut header = tar[..BLOCK].to_vec();
        header[148..156].fill(b' ');
        assert_eq!(stored, header.iter().map(|b| u32::from(*b)).sum::<u32>());
        assert_eq!(&tar[BLOCK..BLOCK + 2], b"{}");
    }
}
