# Sourced by the scripts that install a test prerequisite from Debian's packages.
#
# apt_install NAME PACKAGE: installs PACKAGE with apt (as root, or through sudo), saying so on
# stderr under NAME; exits 1, saying why, when neither root nor sudo is available. Sets the array
# `sudo` for the caller's further commands.
apt_install() {
    local name="$1" package="$2"
    sudo=()
    if [[ "$(id -u)" != 0 ]]; then
        if ! command -v sudo >/dev/null 2>&1; then
            echo "$name: need root or sudo to install $package (apt-get install -y $package)" >&2
            exit 1
        fi
        sudo=(sudo)
    fi
    echo "$name: installing $package" >&2
    "${sudo[@]}" apt-get update -qq
    DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get install -y -qq --no-install-recommends \
        "$package" >&2
}

# require_on_path NAME BINARY PACKAGE: fails, never skips, when BINARY is still missing.
require_on_path() {
    local name="$1" binary="$2" package="$3"
    if ! command -v "$binary" >/dev/null 2>&1; then
        echo "$name: $binary is still not on PATH after installing Debian's $package" >&2
        exit 1
    fi
}
