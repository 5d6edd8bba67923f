public enum AgentPlaceholder {}
