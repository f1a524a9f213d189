# Sourced by the scripts: make `cargo` runnable even when HOME is empty or
# different (rustup's cargo finds its toolchains through RUSTUP_HOME, else
# $HOME/.rustup). Only the toolchain location is borrowed from the account's
# real home; cargo's registry cache stays under $HOME (or CARGO_HOME).
command -v cargo >/dev/null 2>&1 || {
    echo "cargo not found: install Rust (https://rustup.rs) and put cargo on PATH" >&2
    exit 1
}
if ! cargo --version >/dev/null 2>&1; then
    _real_home=$(getent passwd "$(id -u)" 2>/dev/null | cut -d: -f6 || true)
    _cargo_bin=$(dirname "$(command -v cargo)")
    for _home in "$_real_home" "$(dirname "$(dirname "$_cargo_bin")")"; do
        if [ -z "$_home" ] || [ ! -d "$_home/.rustup/toolchains" ]; then continue; fi
        export RUSTUP_HOME=${RUSTUP_HOME:-$_home/.rustup}
        break
    done
    cargo --version >/dev/null 2>&1 || {
        echo "cargo does not run (no Rust toolchain found; set RUSTUP_HOME to your rustup directory)" >&2
        exit 1
    }
fi
