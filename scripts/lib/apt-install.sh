# Sourced by the scripts that install a test prerequisite from Debian's packages.
#
# On a fresh machine another package manager often holds the dpkg or apt lock for minutes
# (boot-time upgrades, unattended-upgrades, cloud-init). apt-get alone fails at once with
# "Could not get lock /var/lib/dpkg/lock-frontend"; here it waits for the lock, bounded by
# APT_LOCK_TIMEOUT seconds (default 300), and says so on stderr.
APT_LOCK_TIMEOUT="${APT_LOCK_TIMEOUT:-300}"
# Seconds between two tries while the lock is held.
APT_LOCK_POLL="${APT_LOCK_POLL:-5}"

# apt_get NAME ARGS…: apt-get ARGS (through the caller's `sudo` array), waiting for a held lock
# as said above. apt's own DPkg::Lock::Timeout covers the dpkg lock of an install; apt-get
# update's lists lock is waited for here, by trying again while apt says the lock is held.
apt_get() {
    local name="$1"
    shift
    local waited=0 output status
    while true; do
        status=0
        output="$("${sudo[@]}" apt-get -o DPkg::Lock::Timeout="$APT_LOCK_TIMEOUT" "$@" 2>&1)" \
            || status=$?
        if [[ $status == 0 ]]; then
            [[ -z "$output" ]] || printf '%s\n' "$output" >&2
            return 0
        fi
        if ! grep -q "Could not get lock\|Unable to acquire the dpkg frontend lock\|Unable to lock directory" <<<"$output"; then
            printf '%s\n' "$output" >&2
            return "$status"
        fi
        if ((waited >= APT_LOCK_TIMEOUT)); then
            printf '%s\n' "$output" >&2
            echo "$name: another package manager still holds the apt/dpkg lock after ${waited}s" \
                "(APT_LOCK_TIMEOUT=$APT_LOCK_TIMEOUT); try again when it is done" >&2
            return "$status"
        fi
        echo "$name: another package manager holds the apt/dpkg lock (a boot-time upgrade?);" \
            "waiting, ${waited}s of at most ${APT_LOCK_TIMEOUT}s" >&2
        sleep "$APT_LOCK_POLL"
        # A poll of 0 (tests) still counts towards the bound, one a try.
        waited=$((waited + (APT_LOCK_POLL > 0 ? APT_LOCK_POLL : 1)))
    done
}

# apt_install NAME PACKAGE…: installs the PACKAGEs with apt (as root, or through sudo), saying
# so on stderr under NAME; exits 1, saying why, when neither root nor sudo is available. Sets
# the array `sudo` for the caller's further commands.
apt_install() {
    local name="$1"
    shift
    sudo=()
    if [[ "$(id -u)" != 0 ]]; then
        if ! command -v sudo >/dev/null 2>&1; then
            echo "$name: need root or sudo to install $* (apt-get install -y $*)" >&2
            exit 1
        fi
        sudo=(sudo)
    fi
    echo "$name: installing $* (apt-get waits up to ${APT_LOCK_TIMEOUT}s for the dpkg lock)" >&2
    apt_get "$name" update -qq || exit 1
    DEBIAN_FRONTEND=noninteractive apt_get "$name" install -y -qq --no-install-recommends "$@" \
        || exit 1
}

# require_on_path NAME BINARY PACKAGE: fails, never skips, when BINARY is still missing.
require_on_path() {
    local name="$1" binary="$2" package="$3"
    if ! command -v "$binary" >/dev/null 2>&1; then
        echo "$name: $binary is still not on PATH after installing Debian's $package" >&2
        exit 1
    fi
}
