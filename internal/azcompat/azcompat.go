// Package azcompat makes Debian's packaged Azure CLI (azure-cli 2.45, what
// `apt-get install azure-cli` gives on Debian and Ubuntu) work: two packaging
// bugs break `az network` and `az role` there, against Azure as against the
// fabric. SiteCustomize is a sitecustomize.py that works around both when it
// is on az's PYTHONPATH, and changes nothing for an az that has neither bug
// (Microsoft's packages, pip). `routekeeper fabric az --apply` writes it for
// users (Install); the end-to-end suites of az use it too.
package azcompat

import (
	"fmt"
	"os"
	"path/filepath"
)

// debianNetworkAlias works around Debian's azure-cli 2.45, whose
// azure-mgmt-network lacks the API version module v2022_01_01 that az's
// network commands load their argument models from: every `az network`
// command fails with "'NoneType' object has no attribute 'standard_medium'"
// (azure-cli issues 24745, 26830). Loaded as sitecustomize, it aliases the missing module, lazily, to the
// package's top-level API version. A package that has the module is left
// alone.
const debianNetworkAlias = `import importlib.abc, importlib.util, sys

_MISSING = "azure.mgmt.network.v2022_01_01"
_REAL = "azure.mgmt.network"

def _missing():
    try:
        spec = importlib.util.find_spec(_REAL)
    except Exception:
        return False
    import os
    return spec is not None and not any(
        os.path.isdir(os.path.join(p, "v2022_01_01")) for p in (spec.submodule_search_locations or []))

class _Alias(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    def find_spec(self, name, path=None, target=None):
        if name == _MISSING or name.startswith(_MISSING + "."):
            return importlib.util.spec_from_loader(name, self, is_package=True)
        return None

    def create_module(self, spec):
        return None

    def exec_module(self, module):
        real = _REAL + module.__name__[len(_MISSING):]
        module.__getattr__ = lambda attr: getattr(importlib.import_module(real), attr)

if _missing():
    sys.meta_path.insert(0, _Alias())
`

// debianAuthorizationConfig works around the same package's
// azure-mgmt-authorization, newer than its az role module: the module reads
// the operation groups' .config, which that SDK calls ._config, so every
// `az role` command that builds a scope fails with "'RoleAssignmentsOperations'
// object has no attribute 'config'" (azure-cli issues 21349, 24959, 26896).
// Loaded with debianNetworkAlias, it gives the SDK's operation groups and
// client a read-only config that returns _config, when their modules load.
const debianAuthorizationConfig = `

class _ConfigAlias(importlib.abc.MetaPathFinder):
    _PREFIX = "azure.mgmt.authorization"

    def find_spec(self, name, path=None, target=None):
        if not name.startswith(self._PREFIX) or ("operations" not in name and "client" not in name):
            return None
        import importlib.machinery
        spec = importlib.machinery.PathFinder.find_spec(name, path)
        if spec is None or spec.loader is None or not hasattr(spec.loader, "exec_module"):
            return spec
        real = spec.loader.exec_module

        def exec_module(module):
            real(module)
            for value in list(vars(module).values()):
                if isinstance(value, type) and value.__name__.endswith(("Operations", "Client")) and not hasattr(value, "config"):
                    value.config = property(lambda self: self._config)

        spec.loader.exec_module = exec_module
        return spec

sys.meta_path.insert(0, _ConfigAlias())
`

// SiteCustomize is the sitecustomize.py of both workarounds.
const SiteCustomize = debianNetworkAlias + debianAuthorizationConfig

// Install writes SiteCustomize as sitecustomize.py into dir (created if
// needed) and returns the PYTHONPATH that loads it: dir, before whatever
// PYTHONPATH already holds.
func Install(dir, pythonPath string) (string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("writing az's sitecustomize.py: %w", err)
	}
	if err := os.WriteFile(filepath.Join(dir, "sitecustomize.py"), []byte(SiteCustomize), 0o644); err != nil {
		return "", fmt.Errorf("writing az's sitecustomize.py: %w", err)
	}
	if pythonPath == "" {
		return dir, nil
	}
	return dir + string(os.PathListSeparator) + pythonPath, nil
}
