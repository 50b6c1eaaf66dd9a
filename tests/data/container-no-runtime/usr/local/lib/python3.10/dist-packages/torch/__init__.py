# torch
