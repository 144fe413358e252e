#!/usr/bin/env bash
# Bring a fresh Debian 12 machine (python3 + git only) to a usable state:
# python3-venv, the pinned Python stack in .venv, then the Ansible provisioning play.
# Sourced by run.sh and test.sh; safe to repeat (each step is skipped when done).
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
VENV="$ROOT/.venv"
SUDO=""
if [ "$(id -u)" -ne 0 ]; then
  command -v sudo >/dev/null || { echo "crosstalk: need root or sudo to install system packages" >&2; exit 1; }
  SUDO="sudo"
fi
log() { printf '\033[1m==> %s\033[0m\n' "$*"; }

if ! python3 -c 'import venv, ensurepip' 2>/dev/null; then
  log "installing python3-venv (apt)"
  $SUDO env DEBIAN_FRONTEND=noninteractive apt-get update -qq
  $SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq python3-venv >/dev/null
fi

stamp="$VENV/.crosstalk-deps"
uv_version=0.13.9
want=$(sha256sum "$ROOT/pyproject.toml" | cut -c1-16)
if [ ! -x "$VENV/bin/python" ] || [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
  log "creating $VENV with the pinned Python dependencies"
  python3 -m venv "$VENV"
  # uv (PyPI) installs the stack in about 45 s where pip takes 85 s (CI's set-up on a fresh clone);
  # pip stays the fallback, and the one that reads a site's pip settings. Bytecode is compiled now,
  # as pip does: where PYTHONDONTWRITEBYTECODE is set, every start would compile every import.
  if "$VENV/bin/pip" install -q "uv==$uv_version" && UV_NATIVE_TLS=1 "$VENV/bin/uv" pip install -q \
       --compile-bytecode --python "$VENV/bin/python" -e "$ROOT[dev]"; then :
  else
    log "uv failed; installing with pip"
    "$VENV/bin/pip" install -q -e "$ROOT[dev]"
  fi
  echo "$want" > "$stamp"
fi
export PATH="$VENV/bin:$PATH"

# MPICH for the second MPI environment, in a prefix of its own (not on PATH): Debian 12's MPICH 4.0.2
# hangs in MPI_Finalize over UCX/TCP (crosstalk/site/mpich.py). Keep the pin equal to crosstalk.site.mpich.VERSION.
mpich_version=5.0.2
if ! "$VENV/mpich/bin/mpichversion" 2>/dev/null | grep -q "Version: *$mpich_version\$"; then
  log "installing MPICH $mpich_version (PyPI) into $VENV/mpich"
  rm -rf "$VENV/mpich"
  "$VENV/bin/pip" install -q --no-deps --prefix "$VENV/mpich" "mpich==$mpich_version"
fi

log "provisioning this machine (playbooks/provision.yml, inventories/local)"
ANSIBLE_CONFIG="$ROOT/ansible.cfg" $SUDO env "PATH=$PATH" ANSIBLE_CONFIG="$ROOT/ansible.cfg" \
  ansible-playbook -i "$ROOT/inventories/local" "$ROOT/playbooks/provision.yml" ${PROVISION_ARGS:-}
