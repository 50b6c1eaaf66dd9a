__version__ = '2.5.1+cu124'
git_version = 'ba696ea'
