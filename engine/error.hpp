// Typed errors the engine throws. Rule: only bad configuration or a failing device throws, and the
// message names the field and the fix; NaN, inf and skipped steps are data, never errors.
#pragma once

#include <stdexcept>
#include <string>

namespace mpx {

// A setting the user gave cannot work; `field` names it (e.g. "scaler.growth_factor").
class ConfigError : public std::runtime_error {
public:
    ConfigError(std::string field, const std::string& message)
        : std::runtime_error(field.empty() ? message : field + ": " + message),
          m_field(std::move(field)) {}
    const std::string& field() const { return m_field; }

private:
    std::string m_field;
};

// The device (GPU, driver, memory) failed; the message says what to do instead.
class DeviceError : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

// A file could not be read or written.
class IoError : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

}  // namespace mpx
