"""The package's version, on the lowest floor so any module can name it
(the WARC writer's ``warcinfo`` record does) without importing the
package's front door."""

__version__ = "0.1.0"
