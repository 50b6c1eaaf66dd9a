# stdlib
