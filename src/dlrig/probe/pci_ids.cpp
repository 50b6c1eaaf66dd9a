#include "dlrig/probe/pci_ids.hpp"

#include "dlrig/platform/fs.hpp"

#include <fmt/format.h>

namespace dlrig::probe {

namespace {
std::string_view line_at(std::string_view db, std::size_t pos) {
  auto nl = db.find('\n', pos);
  return db.substr(pos, nl == std::string_view::npos ? std::string_view::npos : nl - pos);
}

std::string_view trim_name(std::string_view s) {
  while (!s.empty() && (s.back() == '\r' || s.back() == ' ' || s.back() == '\t'))
    s.remove_suffix(1);
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t'))
    s.remove_prefix(1);
  return s;
}
} // namespace

PciIdNames pci_ids_lookup(std::string_view db, std::uint32_t vendor, std::uint32_t device) {
  PciIdNames out;
  auto vkey = fmt::format("\n{:04x}  ", vendor);
  std::string_view first_key = std::string_view(vkey).substr(1);
  std::size_t pos = 0;
  if (db.substr(0, first_key.size()) != first_key) {
    pos = db.find(vkey);
    if (pos == std::string_view::npos)
      return out;
    pos += 1;
  }
  auto vline = line_at(db, pos);
  auto vname = trim_name(vline.substr(std::min<std::size_t>(6, vline.size())));
  if (!vname.empty())
    out.vendor = std::string(vname);
  auto dkey = fmt::format("\t{:04x}  ", device);
  // Device lines follow their vendor line, each starting with one tab; subsystem lines with two;
  // comments with '#'. The next line starting with anything else ends the vendor's block.
  pos += vline.size() + 1;
  while (pos < db.size()) {
    auto line = line_at(db, pos);
    if (!line.empty() && line[0] != '\t' && line[0] != '#')
      break;
    if (line.substr(0, dkey.size()) == dkey) {
      auto name = trim_name(line.substr(dkey.size()));
      if (!name.empty())
        out.device = std::string(name);
      break;
    }
    pos += line.size() + 1;
  }
  return out;
}

std::string pci_ids_short_name(std::string_view name) {
  auto close = name.rfind(']');
  auto open = name.rfind('[', close);
  if (close == std::string_view::npos || open == std::string_view::npos || close <= open + 1)
    return std::string(name);
  return std::string(trim_name(name.substr(open + 1, close - open - 1)));
}

std::string pci_ids_path(const Environment &env) {
  auto it = env.find("DLRIG_PCI_IDS");
  if (it != env.end() && !it->second.empty())
    return it->second;
  return DLRIG_PCI_IDS;
}

PciIdNames PciIds::lookup(std::uint32_t vendor, std::uint32_t device) {
  if (!loaded_) {
    loaded_ = true;
    auto text = Sysroot("/").read(path_, 16u << 20);
    if (text)
      data_ = std::move(*text);
    else
      error_ = text.error().message;
  }
  if (data_.empty())
    return {};
  auto key = (std::uint64_t{vendor} << 32) | device;
  auto it = cache_.find(key);
  if (it == cache_.end())
    it = cache_.emplace(key, pci_ids_lookup(data_, vendor, device)).first;
  return it->second;
}

} // namespace dlrig::probe
