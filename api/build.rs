//! The portal and console bundle (`web/dist`) is embedded with `include_dir!`, whose files
//! cargo does not watch on a stable toolchain: rebuild the crate when any of them changes.
fn main() {
    println!("cargo:rerun-if-changed=web/dist");
}
