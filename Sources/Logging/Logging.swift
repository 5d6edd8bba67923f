public enum LoggingPlaceholder {}
