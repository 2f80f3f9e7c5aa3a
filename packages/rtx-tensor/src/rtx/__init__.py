# rtx-tensor owns the root package; the other distributions' subpackages are found through
# extend_path (from wheels) and uv's editable installs alike. See DESIGN.md.
from pkgutil import extend_path

__path__ = extend_path(__path__, __name__)
