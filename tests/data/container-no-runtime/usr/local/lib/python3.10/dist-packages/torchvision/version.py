__version__ = '0.20.1+cu124'
git_version = '7b1b5fa'
from torchvision.extension import _check_cuda_version
if _check_cuda_version() > 0:
    cuda = _check_cuda_version()
