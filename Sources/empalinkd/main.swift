print("empalinkd")
